"""Crash repair: closing a turn a crash left open (SPEC §3.6).

History is never edited: a log whose last turn never ended is completed by
*appending* synthetic events, so a resumed session is again a valid transcript.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dsh.core.session.types import SessionEvent

INTERRUPTED_RESULT_TEXT = "Tool call interrupted by a crash; no result was recorded."
"""The text of the synthetic result given to a tool call that never got one."""


def _last_turn_start(log: Sequence[SessionEvent]) -> int | None:
    """The index of the last ``turn/start`` when no ``turn/end`` follows it, else None."""
    for index in range(len(log) - 1, -1, -1):
        kind = log[index]["type"]
        if kind == "turn/start":
            return index
        if kind == "turn/end":
            return None
    return None


def interrupted_turn_closers(events: Iterable[SessionEvent]) -> list[SessionEvent]:
    """The events that close the log's open turn, or ``[]`` when no turn is open.

    In order: one error ``tool/result`` (code ``interrupted``) per tool call of the
    open turn still lacking a result (in log order, unless its step already ended),
    then ``step/end`` if a step is open, then ``turn/end {kind: "interrupted"}``.
    Their ``seq`` continues the log and their ``time`` repeats the last event's. The
    caller appends them; ``events`` is not modified.

    Only the events from the last ``turn/start`` on are read (found scanning back from
    the end), since a ``turn/start`` resets everything this tracks: the cost follows
    the open turn's length, not the log's.
    """
    log = events if isinstance(events, Sequence) else list(events)
    start = _last_turn_start(log)
    if start is None:
        return []
    open_turn: int = log[start]["data"]["turn"]
    open_step: int | None = None
    pending: dict[str, int] = {}
    for index in range(start + 1, len(log)):
        event = log[index]
        kind = event["type"]
        data = event["data"]
        if kind == "step/start":
            open_step = data["step"]
        elif kind == "step/end":
            open_step = None
            pending.clear()
        elif kind == "assistant/message":
            for block in data["content"]:
                if block.get("type") == "tool-call":
                    pending[block["id"]] = data["step"]
        elif kind == "tool/result":
            pending.pop(data["callId"], None)
    last = log[-1]
    seq = last["seq"] + 1
    time = last["time"]
    closers: list[SessionEvent] = []
    for call_id, step in pending.items():
        closers.append(
            {
                "type": "tool/result",
                "seq": seq,
                "time": time,
                "data": {
                    "turn": open_turn,
                    "step": step,
                    "callId": call_id,
                    "content": [{"type": "text", "text": INTERRUPTED_RESULT_TEXT}],
                    "isError": True,
                    "error": {"name": "InterruptedError", "code": "interrupted"},
                },
            }
        )
        seq += 1
    if open_step is not None:
        closers.append({"type": "step/end", "seq": seq, "time": time, "data": {"turn": open_turn, "step": open_step}})
        seq += 1
    closers.append(
        {
            "type": "turn/end",
            "seq": seq,
            "time": time,
            "data": {"turn": open_turn, "reason": {"kind": "interrupted"}},
        }
    )
    return closers
