"""A sub-agent's progress shows inside its parent's tool card (``tool_call_update``)."""

from __future__ import annotations

from pathlib import Path

from acp.schema import ToolCallProgress

from dsh.acp.children import PREVIEW_CHARS, progress_update
from dsh.core.subagent import SUBAGENT_PROGRESS, SubagentProgress
from tests.acp.helpers import CWD, bridge_stack


def progress(**fields: object) -> SubagentProgress:
    return SubagentProgress(task_id="subagent-1", child_session="child", **fields)  # type: ignore[arg-type]


async def test_each_step_of_a_child_updates_the_card_of_the_call_that_started_it(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path) as stack:
        await stack.client.initialize()
        session_id = await stack.client.new_session(CWD)
        parent = stack.bridge._agent_of(session_id)
        assert parent is not None
        stack.ctx.emit(SUBAGENT_PROGRESS, parent, progress(kind="tool", title="Run `pytest`", call_id="call-7"))
        stack.ctx.emit(SUBAGENT_PROGRESS, parent, progress(kind="message", text="x" * 500, call_id="call-7"))
        stack.ctx.emit(SUBAGENT_PROGRESS, parent, progress(kind="tool", title="no call"))  # outside a call: not shown
        stack.ctx.emit(SUBAGENT_PROGRESS, object(), progress(kind="tool", title="x", call_id="c"))  # no session here

        def cards(client: object) -> list[dict[str, object]]:
            return [u for _sid, u in stack.client.session_updates if u["sessionUpdate"] == "tool_call_update"]

        await stack.client.wait_for(lambda client: len(cards(client)) >= 2)
        updates = cards(stack.client)
        for update in updates:
            ToolCallProgress.model_validate(update)
        assert [u["content"][0]["content"]["text"] for u in updates] == [
            "sub-agent subagent-1: Run `pytest`",
            "sub-agent subagent-1: " + "x" * PREVIEW_CHARS + "…",
        ]
        assert {u["toolCallId"] for u in updates} == {"call-7"}
        assert {u["status"] for u in updates} == {"in_progress"}


def test_progress_without_a_parent_call_has_no_update() -> None:
    assert progress_update("s", progress(kind="tool", title="t")) is None
