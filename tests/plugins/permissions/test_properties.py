"""Property: whatever the answerers do and whenever a turn is cancelled, every ``approval/asked`` has
exactly one ``approval/decided``, and no tool body runs without an allowing decision, a grant or the mode.

Each example drives the real agent loop (with the invariants plugin checking the log contract) through
a scripted model that asks for batches of ``probe`` calls; ``probe`` may change anything, so outside
``full-access`` every call is asked. The answers are drawn: allow once, allow always, reject (with or
without a message), raise, or hang until the test cancels the turn.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dsh.plugins.permissions as permissions
from dsh.core.approval import (
    ALLOWING_OUTCOMES,
    APPROVAL_REQUEST,
    PERMISSIONS,
    ApprovalAskedEvent,
    ApprovalDecidedEvent,
    ApprovalDecision,
    ApprovalRequest,
)
from dsh.core.llm import text
from dsh.core.session import Session
from dsh.core.tools import ToolDefinition, ToolExecution
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response
from tests.agent_loop.helpers import tool_calls_response

ANSWERS = st.sampled_from(["once", "always", "reject", "reject-with-message", "raise", "hang"])
MODES = st.sampled_from(["read-only", "workspace-write", "full-access"])


def allowed_calls(session: Session) -> set[str]:
    return {
        e.data.call_id  # type: ignore[misc]
        for e in session.events
        if isinstance(e, ApprovalDecidedEvent) and e.data.outcome in ALLOWING_OUTCOMES
    }


async def scenario(mode: str, batches: list[int], answers: list[str]) -> None:
    script: list[Any] = []
    for step, size in enumerate(batches):
        script.append(tool_calls_response(*[(f"c{step}-{i}", "probe", {"n": i}) for i in range(size)]))
    script.append(text_response("done"))
    async with Harness(script) as h:
        await h.ctx.plugin(permissions, {"mode": mode})
        agent = h.agent()
        unjustified: list[str] = []
        ran: list[str] = []
        hanging = asyncio.Event()

        async def probe(args: Any, execution: ToolExecution) -> Any:
            state = h.ctx[PERMISSIONS].state(agent)
            justified = (
                mode == "full-access" or "probe" in state.grants or execution.call_id in allowed_calls(agent.session)
            )
            if not justified:
                unjustified.append(execution.call_id)
            ran.append(execution.call_id)
            return (text("ran"),)

        h.tools.register(ToolDefinition(name="probe", description="p", parameters={"type": "object"}, execute=probe))
        queue = list(answers)

        async def answerer(request: ApprovalRequest, next: Any) -> ApprovalDecision:
            kind = queue.pop(0) if queue else "once"
            if kind == "raise":
                raise RuntimeError("the answerer broke")
            if kind == "hang":
                hanging.set()
                await asyncio.Event().wait()
            outcome = {"once": "allowed-once", "always": "allowed-always"}.get(kind, "rejected")
            message = "try another way" if kind == "reject-with-message" else None
            if message is None:
                return ApprovalDecision(outcome=outcome)  # type: ignore[arg-type]
            return ApprovalDecision(outcome=outcome, message=message)  # type: ignore[arg-type]

        h.ctx.on(APPROVAL_REQUEST, answerer)
        agent.send([text("go")])
        idle = asyncio.ensure_future(agent.when_idle())
        hung = asyncio.ensure_future(hanging.wait())
        await asyncio.wait((idle, hung), return_when=asyncio.FIRST_COMPLETED)
        if hung.done():
            agent.cancel("cancelled")
        await idle
        hung.cancel()

        events = agent.session.events
        pairs = [e for e in events if isinstance(e, ApprovalAskedEvent | ApprovalDecidedEvent)]
        assert [type(e) for e in pairs] == [ApprovalAskedEvent, ApprovalDecidedEvent] * (len(pairs) // 2)
        for asked, decided in zip(pairs[::2], pairs[1::2], strict=True):
            assert asked.data.call_id == decided.data.call_id
        assert unjustified == []
        if mode == "full-access":
            assert pairs == []
        assert allowed_calls(agent.session) <= set(ran)
        for request in h.model.requests:
            assert "approval" not in json.dumps([repr(m) for m in request.messages])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MODES, st.lists(st.integers(1, 3), min_size=1, max_size=4), st.lists(ANSWERS, max_size=10))
def test_every_asked_is_decided_once_and_no_body_runs_unallowed(
    mode: str, batches: list[int], answers: list[str]
) -> None:
    asyncio.run(scenario(mode, batches, answers))
