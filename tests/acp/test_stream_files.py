"""Tool card locations and ``diff`` content on the ACP stream (ACP tool call content/locations)."""

from __future__ import annotations

import json
from typing import Any

from acp.schema import SessionNotification

from dsh.acp import NULL_PRESENTER, TerminalContext, ToolPresenter, stream_session_event_update
from dsh.core.tools import (
    ToolCallPresentation,
    ToolDefinition,
    ToolDiff,
    ToolLocation,
    ToolResultPresentation,
)
from tests.acp.events import text, tool_call, tool_result


async def _execute(args: Any, execution: Any) -> str:
    return "ok"  # pragma: no cover - never executed: only presented


def _file_tool(diffs: tuple[ToolDiff, ...] | None) -> ToolDefinition:
    return ToolDefinition(
        name="change",
        description="changes files",
        parameters={"type": "object", "properties": {}},
        execute=_execute,
        present_call=lambda args: ToolCallPresentation(
            title="Change",
            kind="edit",
            locations=(ToolLocation("rel/a.py", 3), ToolLocation("/abs/b.py")),
        ),
        present_result=lambda args, result: ToolResultPresentation(diffs=diffs),
    )


def _stream(diffs: tuple[ToolDiff, ...] | None, cwd: str | None) -> list[dict[str, Any]]:
    presenter = ToolPresenter({"change": _file_tool(diffs)})
    out: list[dict[str, Any]] = []
    context = TerminalContext(cwd=cwd)
    stream_session_event_update("s", tool_call("c1", "change", {}), out.append, presenter, context)
    stream_session_event_update("s", tool_result("c1", [text("done")]), out.append, presenter, context)
    for frame in out:
        SessionNotification.model_validate(json.loads(json.dumps(frame)))
    return [frame["update"] for frame in out]


def test_locations_and_diffs_resolve_against_the_session_cwd() -> None:
    diffs = (ToolDiff("rel/a.py", old_text="a\n", new_text="b\n"), ToolDiff("/abs/b.py", new_text="new\n"))
    call, done = _stream(diffs, "/work/ws")
    assert list(call) == ["sessionUpdate", "toolCallId", "title", "kind", "status", "locations"]
    assert call["locations"] == [{"path": "/work/ws/rel/a.py", "line": 3}, {"path": "/abs/b.py"}]
    assert done["content"] == [
        {"type": "diff", "path": "/work/ws/rel/a.py", "oldText": "a\n", "newText": "b\n"},
        {"type": "diff", "path": "/abs/b.py", "newText": "new\n"},
    ]


def test_without_a_session_cwd_paths_are_passed_as_given() -> None:
    call, done = _stream((ToolDiff("rel/a.py", new_text="x"),), None)
    assert call["locations"][0] == {"path": "rel/a.py", "line": 3}
    assert done["content"] == [{"type": "diff", "path": "rel/a.py", "newText": "x"}]


def test_no_diffs_keep_the_text_content() -> None:
    for diffs in (None, ()):
        _, done = _stream(diffs, "/w")
        assert done["content"] == [{"type": "content", "content": {"type": "text", "text": "done"}}]


def test_generic_cards_carry_no_locations() -> None:
    out: list[dict[str, Any]] = []
    stream_session_event_update("s", tool_call("c1", "read_it", {}), out.append, NULL_PRESENTER)
    assert "locations" not in out[0]["update"]
