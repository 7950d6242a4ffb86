"""The readable transcript of a session log (pure)."""

from __future__ import annotations

from typing import Any

from dsh.cli.transcript import blocks_text, event_lines, format_time, header_lines, render_transcript
from dsh.core.session import SessionEvent


def event(kind: str, data: Any) -> SessionEvent:
    return {"type": kind, "seq": 0, "time": 0, "data": data}


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


def test_the_header_names_the_session_time_workspace_and_parent() -> None:
    assert header_lines({"version": 1, "id": "s", "createdAt": 0}) == ["session s", f"created {format_time(0)}"]
    full = header_lines({"version": 1, "id": "s", "createdAt": 0, "cwd": "/w", "parentSession": "p"})
    assert full[2:] == ["cwd /w", "forked from p"]


def test_messages_are_labelled_and_multi_line_text_is_indented() -> None:
    assert event_lines(event("user/message", {"content": [text("a\n\nb\n")], "source": {"kind": "user"}})) == [
        "user: a\n\n      b"
    ]
    assert event_lines(event("context/message", {"content": [text("note")], "source": {"kind": "plugin"}})) == [
        "context (plugin): note"
    ]
    assert event_lines(event("steering/message", {"turn": 1, "content": [text("go")], "source": {"kind": "user"}})) == [
        "steering (user): go"
    ]
    assert event_lines(event("context/message", {"content": [text("x")], "source": "odd"})) == ["context (unknown): x"]
    assert event_lines(event("context/message", {"content": [text("x")], "source": {}})) == ["context (unknown): x"]


def test_assistant_text_tool_calls_results_and_errors() -> None:
    said = {"turn": 1, "step": 1, "content": [{"type": "reasoning", "text": "hmm"}, text("hi")]}
    assert event_lines(event("assistant/message", said)) == ["assistant: hi"]
    silent = {"turn": 1, "step": 1, "content": [{"type": "tool-call", "id": "c", "name": "bash", "arguments": "{}"}]}
    assert event_lines(event("assistant/message", silent)) == []
    call = {"turn": 1, "step": 1, "callId": "c", "name": "bash", "arguments": '{"command":"ls"}'}
    assert event_lines(event("tool/call", call)) == ['  → bash {"command":"ls"}']
    result = {"turn": 1, "step": 1, "callId": "c", "content": [text("a\nb\n")], "isError": False}
    assert event_lines(event("tool/result", result)) == ["  ← a\n    b"]
    failed = {"turn": 1, "step": 1, "callId": "c", "content": [], "isError": True}
    assert event_lines(event("tool/result", failed)) == ["  ← error: (no output)"]
    assert event_lines(event("error", {"turn": 1, "step": 1, "message": "boom", "code": "X"})) == [
        "  ! error: boom [X]"
    ]
    assert event_lines(event("error", {"turn": 1, "step": 1, "message": "boom"})) == ["  ! error: boom"]


def test_turn_boundaries_and_hidden_or_unknown_events() -> None:
    start = {"turn": 2, "trigger": {"kind": "injection", "source": {"kind": "plugin"}}}
    assert event_lines(event("turn/start", start)) == ["", "── turn 2 (injection) ──"]
    ended = {"turn": 2, "reason": {"kind": "error", "message": "bad", "code": "E"}}
    assert event_lines(event("turn/end", ended)) == ["── turn 2 ended: error: bad [E] ──"]
    for hidden in ("step/start", "step/end", "assistant/chunk", "usage"):
        assert event_lines(event(hidden, {})) == []
    assert event_lines(event("compaction/marker", {})) == ["  [compaction/marker]"]


def test_blocks_text_keeps_text_and_marks_images() -> None:
    blocks = [text("see "), {"type": "image", "url": "u"}, {"type": "mystery"}]
    assert blocks_text(blocks) == "see [image]"


def test_a_whole_transcript_ends_with_a_newline() -> None:
    events = [
        event("turn/start", {"turn": 1, "trigger": {"kind": "message", "source": {"kind": "user"}}}),
        event("user/message", {"content": [text("hi")], "source": {"kind": "user"}}),
        event("turn/end", {"turn": 1, "reason": {"kind": "aborted", "reason": "interrupted"}}),
    ]
    assert render_transcript({"version": 1, "id": "s", "createdAt": 0}, events) == (
        f"session s\ncreated {format_time(0)}\n\n── turn 1 (message) ──\nuser: hi\n"
        "── turn 1 ended: aborted (interrupted) ──\n"
    )
