"""The file tools' cards over ACP: locations on calls, ``diff`` content on edit and write results.

Real tools run on real files; their logged call and result go through the ACP
stream as a replay would, and every frame is checked against the ACP schema.
"""

from __future__ import annotations

import json
from typing import Any

from acp.schema import SessionNotification

from dsh.acp import TerminalContext, ToolPresenter, stream_session_event_update
from tests.acp.events import tool_call, tool_result
from tests.plugins.tool_fs.conftest import Stack


async def _cards(stack: Stack, name: str, args: dict[str, Any]) -> list[dict[str, Any]]:
    result = await stack.call(name, args)
    call_id = stack.calls[-1]
    out: list[dict[str, Any]] = []
    presenter = ToolPresenter(stack.tools)
    context = TerminalContext(cwd=str(stack.ws))
    stream_session_event_update("s", tool_call(call_id, name, args), out.append, presenter, context)
    stream_session_event_update(
        "s", tool_result(call_id, result.content, result.is_error), out.append, presenter, context
    )
    for frame in out:
        SessionNotification.model_validate(json.loads(json.dumps(frame)))
    return [frame["update"] for frame in out]


async def test_read_card_points_at_the_file_and_line(stack: Stack) -> None:
    (stack.ws / "a.txt").write_text("one\ntwo\n")
    call, done = await _cards(stack, "read", {"file_path": "a.txt", "offset": 2})
    assert call["locations"] == [{"path": str(stack.ws / "a.txt"), "line": 2}]
    assert done["status"] == "completed"
    assert done["content"][0]["type"] == "content"


async def test_write_of_a_new_file_shows_all_of_it_as_new(stack: Stack) -> None:
    call, done = await _cards(stack, "write", {"file_path": "new.txt", "content": "hello\n"})
    path = str(stack.ws / "new.txt")
    assert call["locations"] == [{"path": path}]
    assert done["content"] == [{"type": "diff", "path": path, "newText": "hello\n"}]


async def test_edit_shows_the_changed_region_as_a_diff(stack: Stack) -> None:
    lines = [f"line {n}\n" for n in range(1, 21)]
    (stack.ws / "b.txt").write_text("".join(lines))
    await stack.text("read", {"file_path": "b.txt"})
    call, done = await _cards(stack, "edit", {"file_path": "b.txt", "old_string": "line 10\n", "new_string": "ten\n"})
    path = str(stack.ws / "b.txt")
    assert call["locations"] == [{"path": path}]
    assert done["title"] == "b.txt (+1 -1)"
    (diff,) = done["content"]
    assert diff == {
        "type": "diff",
        "path": path,
        "oldText": "".join(lines[6:13]),
        "newText": "".join([*lines[6:9], "ten\n", *lines[10:13]]),
    }


async def test_write_over_a_file_shows_each_hunk(stack: Stack) -> None:
    lines = [f"{n}\n" for n in range(30)]
    (stack.ws / "c.txt").write_text("".join(lines))
    await stack.text("read", {"file_path": "c.txt"})
    changed = ["zero\n", *lines[1:29], "last"]
    _, done = await _cards(stack, "write", {"file_path": "c.txt", "content": "".join(changed)})
    first, second = done["content"]
    assert (first["oldText"], first["newText"]) == ("".join(lines[:4]), "".join(changed[:4]))
    assert (second["oldText"], second["newText"]) == ("".join(lines[26:]), "".join(changed[26:]))


async def test_a_failed_edit_keeps_its_error_text(stack: Stack) -> None:
    _, done = await _cards(stack, "edit", {"file_path": "missing.txt", "old_string": "a", "new_string": "b"})
    assert done["status"] == "failed"
    assert [item["type"] for item in done["content"]] == ["content"]
