"""The readable transcript of a session log (pure)."""

from __future__ import annotations

from typing import Any

from msgspec import Raw

from dsh.cli.transcript import blocks_text, event_lines, format_time, header_lines, render_transcript
from dsh.core.llm import ImageBlock, ReasoningBlock, ToolCallBlock, text
from dsh.core.session import (
    ContextMessageEvent,
    MessageData,
    SessionEvent,
    SessionHeader,
    TurnStartData,
    TurnStartEvent,
    UntypedEvent,
    parse_session_event,
)

USER = {"kind": "user"}


def event(kind: str, data: Any) -> SessionEvent:
    """The event a log line ``{"type": kind, "seq": 0, "time": 0, "data": data}`` reads as."""
    return parse_session_event({"type": kind, "seq": 0, "time": 0, "data": data})


def block(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


def test_the_header_names_the_session_time_workspace_and_parent() -> None:
    assert header_lines(SessionHeader(version=1, id="s", created_at=0)) == ["session s", f"created {format_time(0)}"]
    full = header_lines(SessionHeader(version=1, id="s", created_at=0, cwd="/w", parent_session="p"))
    assert full[2:] == ["cwd /w", "forked from p"]
    child = SessionHeader(version=1, id="c", created_at=0, parent_session="p", parent_call_id="c1", origin="subagent")
    assert header_lines(child)[2:] == ["sub-agent of p (call c1)"]
    api_child = SessionHeader(version=1, id="c", created_at=0, parent_session="p", origin="subagent")
    assert header_lines(api_child)[2:] == ["sub-agent of p"]


def test_messages_are_labelled_and_multi_line_text_is_indented() -> None:
    assert event_lines(event("user/message", {"content": [block("a\n\nb\n")], "source": USER})) == [
        "user: a\n\n      b"
    ]
    plugin = {"kind": "plugin", "plugin": "notes"}
    assert event_lines(event("context/message", {"content": [block("note")], "source": plugin})) == [
        "context (plugin): note"
    ]
    assert event_lines(event("steering/message", {"turn": 1, "content": [block("go")], "source": USER})) == [
        "steering (user): go"
    ]
    robot = {"kind": "robot", "serial": 7}  # a source kind this version does not know, kept as read
    assert event_lines(event("context/message", {"content": [block("x")], "source": robot})) == ["context (robot): x"]
    untagged = ContextMessageEvent(seq=0, time=0, data=MessageData(content=(text("x"),), source=Raw(b"{}")))
    assert event_lines(untagged) == ["context (unknown): x"]


def test_assistant_text_tool_calls_results_and_errors() -> None:
    said = {"turn": 1, "step": 1, "content": [{"type": "reasoning", "text": "hmm"}, block("hi")]}
    assert event_lines(event("assistant/message", said)) == ["assistant: hi"]
    silent = {"turn": 1, "step": 1, "content": [{"type": "tool-call", "id": "c", "name": "bash", "arguments": "{}"}]}
    assert event_lines(event("assistant/message", silent)) == []
    call = {"turn": 1, "step": 1, "callId": "c", "name": "bash", "arguments": '{"command":"ls"}'}
    assert event_lines(event("tool/call", call)) == ['  → bash {"command":"ls"}']
    result = {"turn": 1, "step": 1, "callId": "c", "content": [block("a\nb\n")], "isError": False}
    assert event_lines(event("tool/result", result)) == ["  ← a\n    b"]
    failed = {"turn": 1, "step": 1, "callId": "c", "content": [], "isError": True}
    assert event_lines(event("tool/result", failed)) == ["  ← error: (no output)"]
    assert event_lines(event("error", {"turn": 1, "step": 1, "message": "boom", "code": "X"})) == [
        "  ! error: boom [X]"
    ]
    assert event_lines(event("error", {"turn": 1, "step": 1, "message": "boom"})) == ["  ! error: boom"]


def test_turn_boundaries_and_hidden_or_unknown_events() -> None:
    start = {"turn": 2, "trigger": {"kind": "injection", "source": {"kind": "plugin", "plugin": "notes"}}}
    assert event_lines(event("turn/start", start)) == ["", "── turn 2 (injection) ──"]
    timer = {"turn": 3, "trigger": {"kind": "timer", "every": "1h"}}  # a trigger kind from a newer writer
    assert event_lines(event("turn/start", timer)) == ["", "── turn 3 (timer) ──"]
    untagged = TurnStartEvent(seq=0, time=0, data=TurnStartData(turn=4, trigger=Raw(b"{}")))
    assert event_lines(untagged) == ["", "── turn 4 (unknown) ──"]
    ended = {"turn": 2, "reason": {"kind": "error", "message": "bad", "code": "E"}}
    assert event_lines(event("turn/end", ended)) == ["── turn 2 ended: error: bad [E] ──"]
    usage = {"inputTokens": 1, "outputTokens": 1}
    hidden = [
        event("step/start", {"turn": 1, "step": 1}),
        event("step/end", {"turn": 1, "step": 1}),
        event("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "a"}}),
        event("usage", {"turn": 1, "step": 1, "usage": usage}),
    ]
    for each in hidden:
        assert event_lines(each) == []
    unknown = event("compaction/marker", {})
    assert type(unknown) is UntypedEvent
    assert event_lines(unknown) == ["  [compaction/marker]"]


def test_blocks_text_keeps_text_and_marks_images() -> None:
    blocks = [
        text("see "),
        ImageBlock(url="u"),
        ReasoningBlock(text="hidden"),
        ToolCallBlock(id="c", name="n", arguments="{}"),
        Raw(b'{"type":"mystery"}'),
    ]
    assert blocks_text(blocks) == "see [image]"


def test_a_whole_transcript_ends_with_a_newline() -> None:
    events = [
        event("turn/start", {"turn": 1, "trigger": {"kind": "message", "source": USER}}),
        event("user/message", {"content": [block("hi")], "source": USER}),
        event("turn/end", {"turn": 1, "reason": {"kind": "aborted", "reason": "interrupted"}}),
    ]
    assert render_transcript(SessionHeader(version=1, id="s", created_at=0), events) == (
        f"session s\ncreated {format_time(0)}\n\n── turn 1 (message) ──\nuser: hi\n"
        "── turn 1 ended: aborted (interrupted) ──\n"
    )
