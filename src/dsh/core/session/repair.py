"""Crash repair: closing a turn a crash left open (SPEC §3.6).

History is never edited: a log whose last turn never ended is completed by
*appending* synthetic events, so a resumed session is again a valid transcript.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dsh.core.llm.types import TextBlock, ToolCallBlock
from dsh.core.session.types import (
    AssistantMessageEvent,
    InterruptedReason,
    SessionEvent,
    StepData,
    StepEndEvent,
    StepStartEvent,
    ToolErrorInfo,
    ToolResultData,
    ToolResultEvent,
    TurnEndData,
    TurnEndEvent,
    TurnStartEvent,
)

INTERRUPTED_RESULT_TEXT = "Tool call interrupted by a crash; no result was recorded."
"""The text of the synthetic result given to a tool call that never got one."""

_INTERRUPTED_CONTENT = (TextBlock(text=INTERRUPTED_RESULT_TEXT),)
_INTERRUPTED_ERROR = ToolErrorInfo(name="InterruptedError", code="interrupted")


def _last_turn_start(log: Sequence[SessionEvent]) -> tuple[int, TurnStartEvent] | None:
    """The last ``turn/start`` and its index when no ``turn/end`` follows it, else None."""
    for index in range(len(log) - 1, -1, -1):
        event = log[index]
        if type(event) is TurnStartEvent:
            return index, event
        if type(event) is TurnEndEvent:
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
    found = _last_turn_start(log)
    if found is None:
        return []
    start, opening = found
    open_turn = opening.data.turn
    open_step: int | None = None
    pending: dict[str, int] = {}
    for index in range(start + 1, len(log)):
        event = log[index]
        if type(event) is StepStartEvent:
            open_step = event.data.step
        elif type(event) is StepEndEvent:
            open_step = None
            pending.clear()
        elif type(event) is AssistantMessageEvent:
            for block in event.data.content:
                if type(block) is ToolCallBlock:
                    pending[block.id] = event.data.step
        elif type(event) is ToolResultEvent:
            pending.pop(event.data.call_id, None)
    last = log[-1]
    seq = last.seq + 1
    time = last.time
    closers: list[SessionEvent] = []
    for call_id, step in pending.items():
        data = ToolResultData(
            turn=open_turn,
            step=step,
            call_id=call_id,
            content=_INTERRUPTED_CONTENT,
            is_error=True,
            error=_INTERRUPTED_ERROR,
        )
        closers.append(ToolResultEvent(seq=seq, time=time, data=data))
        seq += 1
    if open_step is not None:
        closers.append(StepEndEvent(seq=seq, time=time, data=StepData(turn=open_turn, step=open_step)))
        seq += 1
    closers.append(TurnEndEvent(seq=seq, time=time, data=TurnEndData(turn=open_turn, reason=InterruptedReason())))
    return closers
