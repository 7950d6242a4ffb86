"""The ACP answerer: ``approval/request`` → ``session/request_permission`` → the decision.

The bridge runs on the real stack (scripted model, JSONL persistence, the approvals
service) over the in-memory transport; a probe tool asks the approvals service the
way the permissions plugin does, and counts the calls it was allowed to run. Every
``session/request_permission`` frame is checked against the official SDK schema.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from acp.schema import RequestPermissionRequest, RequestPermissionResponse

from dsh.acp.permission import REQUEST_PERMISSION, decision_from_answer, tool_call_card
from dsh.core.approval import APPROVALS, ApprovalDecidedEvent, ApprovalRequest, ApprovalService
from dsh.core.llm import ContentBlock, ToolCallBlock, text
from dsh.core.tools import TOOLS, ToolCallPresentation, ToolDefinition, ToolExecution
from dsh.testing.scripted import text_response, tool_call_response
from tests.acp.client import AcpTestClient
from tests.acp.helpers import BridgeStack, bridge_stack

GRANT = "guarded(*)"
REASON = "touch the probe outside the workspace"


class Probe:
    """A tool that asks before it runs; ``runs`` holds the ids of the calls that ran."""

    def __init__(
        self, stack: BridgeStack, *, name: str = "guarded", grant: str = GRANT, present: bool | str = False
    ) -> None:
        self.stack = stack
        self.name = name
        self.grant = grant
        self.present = present
        self.runs: list[str] = []

    async def execute(self, args: Any, execution: ToolExecution) -> Sequence[ContentBlock]:
        request = ApprovalRequest(
            agent=execution.agent,
            tool_name=self.name,
            call_id=execution.call_id,
            arguments=args,
            reason=REASON,
            grant=self.grant,
            signal=execution.signal,
        )
        decision = await self.stack.ctx[APPROVALS].request(request)
        if not decision.allowed:
            raise RuntimeError(f"not allowed ({decision.outcome})")
        self.runs.append(execution.call_id)
        return [text("ran")]

    def card(self, args: Any) -> ToolCallPresentation | None:
        if self.present == "raise":
            raise ValueError("no card today")
        if not self.present:
            return None
        return ToolCallPresentation(
            title=f"touch {args['path']}",
            kind="edit",
            content=(text(f"touches {args['path']}"), ToolCallBlock(id="x", name="y", arguments="{}")),
        )

    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            name=self.name,
            description="a probe that asks first",
            parameters={"type": "object", "properties": {"path": {"type": "string"}}},
            execute=self.execute,
            present_call=self.card,
        )


async def probe_stack(stack: BridgeStack, **options: Any) -> Probe:
    await stack.ctx.plugin(ApprovalService)
    probe = Probe(stack, **options)
    stack.ctx[TOOLS].register(probe.definition())
    return probe


def permission_frames(client: AcpTestClient) -> list[dict[str, Any]]:
    return [frame for frame in client.frames if frame.get("method") == REQUEST_PERMISSION]


async def next_question(client: AcpTestClient, count: int = 1) -> dict[str, Any]:
    """The ``count``-th permission request the client received (waits for it), schema-checked."""
    await client.wait_for(lambda c: len(permission_frames(c)) >= count)
    frame = permission_frames(client)[count - 1]
    RequestPermissionRequest.model_validate(frame["params"])
    return frame


def answer(client: AcpTestClient, frame: dict[str, Any], result: Any) -> None:
    client.write_raw(json.dumps({"jsonrpc": "2.0", "id": frame["id"], "result": result}))


def selected(option_id: str) -> dict[str, Any]:
    result = {"outcome": {"outcome": "selected", "optionId": option_id}}
    RequestPermissionResponse.model_validate(result)
    return result


def decisions(stack: BridgeStack, session_id: str) -> list[str]:
    return [e.data.outcome for e in stack.agent(session_id).session.events if type(e) is ApprovalDecidedEvent]


def tool_statuses(client: AcpTestClient) -> list[str]:
    return [u["status"] for u in client.updates if u["sessionUpdate"] == "tool_call_update"]


SCRIPT = [tool_call_response("c1", "guarded", {"path": "/etc/x"}), text_response("done")]


async def test_allow_once_asks_with_the_call_card_and_runs_the_call(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path, SCRIPT) as stack:
        probe = await probe_stack(stack)
        session_id = await stack.session()
        prompt = stack.client.prompt_future(session_id, "go")
        question = await next_question(stack.client)
        card = next(u for u in stack.updates if u["sessionUpdate"] == "tool_call")
        assert question["params"] == {
            "sessionId": session_id,
            "toolCall": {
                "toolCallId": card["toolCallId"],
                "title": "guarded",
                "kind": "other",
                "rawInput": {"path": "/etc/x"},
                "_meta": {"reason": REASON, "grant": GRANT},
            },
            "options": [
                {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
                {"optionId": "allow-always", "name": f"Always allow {GRANT}", "kind": "allow_always"},
                {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
            ],
        }
        assert not prompt.done()
        answer(stack.client, question, selected("allow-once"))
        assert (await prompt)["result"] == {"stopReason": "end_turn"}
        assert probe.runs == ["c1"]
        assert decisions(stack, session_id) == ["allowed-once"]
        assert tool_statuses(stack.client) == ["completed"]


@pytest.mark.parametrize(
    ("result", "outcome"),
    [
        (selected("allow-always"), "allowed-always"),
        (selected("reject-once"), "rejected"),
        (selected("something-else"), "rejected"),  # never a grant for an option not offered
        ({"outcome": {"outcome": "cancelled"}}, "cancelled"),
        ({"outcome": {"outcome": "maybe"}}, "unavailable"),
        ({"outcome": 5}, "unavailable"),
        ("not an object", "unavailable"),
    ],
)
async def test_each_answer_maps_to_its_outcome(tmp_path: Path, result: Any, outcome: str) -> None:
    async with bridge_stack(tmp_path, SCRIPT) as stack:
        probe = await probe_stack(stack)
        session_id = await stack.session()
        prompt = stack.client.prompt_future(session_id, "go")
        answer(stack.client, await next_question(stack.client), result)
        assert (await prompt)["result"] == {"stopReason": "end_turn"}
        assert decisions(stack, session_id) == [outcome]
        allowed = outcome.startswith("allowed")
        assert probe.runs == (["c1"] if allowed else [])
        assert tool_statuses(stack.client) == ["completed" if allowed else "failed"]
        if not allowed:  # the model reads why the call did not run
            tool_message = stack.harness.model.requests[1].messages[-1]
            assert f"not allowed ({outcome})" in repr(tool_message.content)


async def test_a_client_error_fails_closed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with bridge_stack(tmp_path, SCRIPT) as stack:
        probe = await probe_stack(stack)
        session_id = await stack.session()
        prompt = stack.client.prompt_future(session_id, "go")
        question = await next_question(stack.client)
        error = {"code": -32603, "message": "the editor could not show the prompt"}
        stack.client.write_raw(json.dumps({"jsonrpc": "2.0", "id": question["id"], "error": error}))
        assert (await prompt)["result"] == {"stopReason": "end_turn"}
        assert decisions(stack, session_id) == ["unavailable"]
        assert probe.runs == []
        assert "the editor could not show the prompt" in caplog.text


async def test_cancel_while_asking_settles_cancelled_and_a_late_answer_is_ignored(tmp_path: Path) -> None:
    script = [*SCRIPT, text_response("next")]
    async with bridge_stack(tmp_path, script) as stack:
        probe = await probe_stack(stack)
        session_id = await stack.session()
        prompt = stack.client.prompt_future(session_id, "go")
        question = await next_question(stack.client)
        stack.client.cancel(session_id)
        assert (await prompt)["result"] == {"stopReason": "cancelled"}
        await stack.agent(session_id).when_idle()
        assert decisions(stack, session_id) == ["cancelled"]
        answer(stack.client, question, selected("allow-once"))  # too late: nobody waits for it
        assert await stack.client.prompt(session_id, "and now?") == {"stopReason": "end_turn"}
        assert probe.runs == []


async def test_only_allow_once_and_reject_without_a_grant_and_the_tool_card_is_used(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path, SCRIPT) as stack:
        await probe_stack(stack, grant="", present=True)
        session_id = await stack.session()
        prompt = stack.client.prompt_future(session_id, "go")
        question = await next_question(stack.client)
        assert question["params"]["toolCall"] == {
            "toolCallId": "c1",
            "title": "touch /etc/x",
            "kind": "edit",
            "content": [{"type": "content", "content": {"type": "text", "text": "touches /etc/x"}}],
            "_meta": {"reason": REASON, "grant": ""},
        }
        assert [option["optionId"] for option in question["params"]["options"]] == ["allow-once", "reject-once"]
        answer(stack.client, question, selected("allow-always"))  # not offered: a rejection
        await prompt
        assert decisions(stack, session_id) == ["rejected"]


async def test_a_card_that_raises_is_shown_generically(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    async with bridge_stack(tmp_path, SCRIPT) as stack:
        await probe_stack(stack, present="raise")
        session_id = await stack.session()
        prompt = stack.client.prompt_future(session_id, "go")
        question = await next_question(stack.client)
        assert question["params"]["toolCall"]["title"] == "guarded"
        answer(stack.client, question, selected("reject-once"))
        await prompt
        assert 'tool "guarded" presentCall threw, using generic presentation: ValueError: no card today' in caplog.text


async def test_requests_the_bridge_does_not_own_are_delegated(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path) as stack:
        await probe_stack(stack)
        session_id = await stack.session()
        agent = stack.agent(session_id)
        approvals = stack.ctx[APPROVALS]

        def ask(agent: object, call_id: str | None) -> ApprovalRequest:
            return ApprovalRequest(agent=agent, tool_name="x", call_id=call_id, arguments={}, reason="r", grant="g")

        assert (await approvals.request(ask(None, "c1"))).outcome == "unavailable"
        assert (await approvals.request(ask(object(), "c1"))).outcome == "unavailable"
        assert (await approvals.request(ask(agent, None))).outcome == "unavailable"  # not tied to a call
        assert permission_frames(stack.client) == []


async def test_after_the_client_left_requests_fail_closed(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path) as stack:
        await probe_stack(stack)
        session_id = await stack.session()
        agent = stack.agent(session_id)
        await stack.close_client_transport()
        request = ApprovalRequest(agent=agent, tool_name="x", call_id="c9", arguments={}, reason="r", grant="g")
        assert (await stack.ctx[APPROVALS].request(request)).outcome == "unavailable"


def test_the_card_and_the_decisions_are_pure() -> None:
    request = ApprovalRequest(agent=None, tool_name="mcp__x__y", call_id="c1", arguments="raw", reason="r", grant="")
    warnings: list[str] = []
    assert tool_call_card(None, request, warnings.append) == {
        "toolCallId": "c1",
        "title": "mcp__x__y",
        "kind": "other",
        "rawInput": "raw",
        "_meta": {"reason": "r", "grant": ""},
    }
    assert (
        decision_from_answer({"outcome": {"outcome": "selected", "optionId": "allow-once"}}, ()).outcome == "rejected"
    )
    assert decision_from_answer(None, ()).outcome == "unavailable"
