"""Builders for session events and logs, shared by the session and persistence tests.

The data builders return the JSON form of an event's ``data`` (what a log line holds,
what ``Session.append("<type>", data)`` takes); :func:`event`, :func:`log` and
:func:`one_turn_log` return typed events, decoded from that JSON like a loaded log.
"""

from __future__ import annotations

from typing import Any

from dsh.core.session import SessionEvent, parse_session_event


def text(value: str) -> dict[str, Any]:
    """A text content block, as JSON."""
    return {"type": "text", "text": value}


def event(type: str, seq: int, data: Any, time: int = 0) -> SessionEvent:
    """The typed event of the log line ``{type, seq, time, data}`` (an unknown type is an UntypedEvent)."""
    return parse_session_event({"type": type, "seq": seq, "time": time, "data": data})


def user_message(value: str) -> dict[str, Any]:
    """``user/message`` data with one text block from the user."""
    return {"content": [text(value)], "source": {"kind": "user"}}


def assistant_message(turn: int, step: int, *content: dict[str, Any]) -> dict[str, Any]:
    """``assistant/message`` data."""
    return {"turn": turn, "step": step, "content": list(content)}


def tool_call_block(call_id: str, name: str = "bash", arguments: str = "{}") -> dict[str, Any]:
    """A ``tool-call`` content block, as JSON."""
    return {"type": "tool-call", "id": call_id, "name": name, "arguments": arguments}


def tool_result(turn: int, step: int, call_id: str, value: str, is_error: bool = False) -> dict[str, Any]:
    """``tool/result`` data with one text block."""
    return {"turn": turn, "step": step, "callId": call_id, "content": [text(value)], "isError": is_error}


def turn_start(turn: int) -> dict[str, Any]:
    """``turn/start`` data triggered by a user message."""
    return {"turn": turn, "trigger": {"kind": "message", "source": {"kind": "user"}}}


def turn_end(turn: int, kind: str = "completed") -> dict[str, Any]:
    """``turn/end`` data with a reason of ``kind``."""
    return {"turn": turn, "reason": {"kind": kind}}


def step(turn: int, number: int) -> dict[str, Any]:
    """``step/start`` / ``step/end`` data."""
    return {"turn": turn, "step": number}


def log(*entries: tuple[str, Any], start: int = 0, time: int = 0) -> list[SessionEvent]:
    """Typed events from ``(type, data)`` pairs with contiguous seqs from ``start``."""
    return [event(kind, start + index, data, time) for index, (kind, data) in enumerate(entries)]


def one_turn_log(turn: int = 1, start: int = 0, time: int = 0) -> list[SessionEvent]:
    """A balanced turn: turn/start, user "hi", step/start, assistant "hello", step/end, turn/end."""
    return log(
        ("turn/start", turn_start(turn)),
        ("user/message", user_message("hi")),
        ("step/start", step(turn, 1)),
        ("assistant/message", assistant_message(turn, 1, text("hello"))),
        ("step/end", step(turn, 1)),
        ("turn/end", turn_end(turn)),
        start=start,
        time=time,
    )
