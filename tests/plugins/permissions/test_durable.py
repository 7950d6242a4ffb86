"""Mode and "always" grants live in the session log: a resumed session and a fork keep them (real JSONL logs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dsh.plugins.permissions as permissions
from dsh.core.agent import AgentOptions, ResumeAgentOptions
from dsh.core.approval import (
    APPROVAL_REQUEST,
    PERMISSIONS,
    ApprovalDecision,
    ApprovalRequest,
    PermissionState,
)
from dsh.core.llm import text
from dsh.core.persistence import SESSION_PERSISTENCE
from dsh.core.tools import ToolDefinition, ToolExecution
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response, tool_call_response

MOCK = AgentOptions(model="mock")


async def stack(h: Harness, root: Path, asked: list[str], answer: str | None) -> list[str]:
    await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(root)})
    await h.ctx.plugin(permissions, {})
    ran: list[str] = []

    async def probe(args: Any, execution: ToolExecution) -> Any:
        ran.append(execution.call_id)
        return (text("ran"),)

    h.tools.register(ToolDefinition(name="probe", description="p", parameters={"type": "object"}, execute=probe))

    async def answerer(request: ApprovalRequest, next: Any) -> ApprovalDecision:
        asked.append(request.grant)
        if answer is None:
            return await next()  # type: ignore[no-any-return]
        return ApprovalDecision(outcome=answer)  # type: ignore[arg-type]

    h.ctx.on(APPROVAL_REQUEST, answerer)
    return ran


async def test_resume_and_fork_keep_the_mode_and_the_grants(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    asked: list[str] = []
    async with Harness([tool_call_response("c1", "probe", {}), text_response("ok")]) as h:
        ran = await stack(h, root, asked, "allowed-always")
        agent = h.agent()
        await h.ctx[PERMISSIONS].set_mode(agent, mode="read-only", policy="ask")
        agent.send([text("probe it")])
        await agent.when_idle()
        assert ran == ["c1"]
        session_id = agent.session.id
    assert asked == ["probe"]
    expected = PermissionState(mode="read-only", policy="ask", grants=("probe",))

    async with Harness([tool_call_response("c2", "probe", {}), text_response("ok")]) as h:
        ran = await stack(h, root, asked, None)
        resumed = await h.loop.resume(
            ResumeAgentOptions(agent_id="main", resume_session_id=session_id, agent_options=MOCK)
        )
        assert h.ctx[PERMISSIONS].state(resumed) == expected
        resumed.send([text("again")])
        await resumed.when_idle()
        assert ran == ["c2"]  # granted: not asked again
    assert asked == ["probe"]

    async with Harness([tool_call_response("c3", "probe", {}), text_response("ok")]) as h:
        ran = await stack(h, root, asked, None)
        fork = await h.ctx[SESSION_PERSISTENCE].fork(session_id)
        forked = await h.loop.resume(
            ResumeAgentOptions(agent_id="main", resume_session_id=fork.meta.id, agent_options=MOCK)
        )
        assert h.ctx[PERMISSIONS].state(forked) == expected
        forked.send([text("in the fork")])
        await forked.when_idle()
        assert ran == ["c3"]
    assert asked == ["probe"]
