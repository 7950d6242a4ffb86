"""The session-log contract, checked one event at a time (SPEC §13).

A :class:`SessionTrace` is the little state needed to judge the next event of one
session: the last ``seq``, the open turn and step, the numbers the next turn and
step must carry, and the tool calls of the open step still owed a result.
:func:`check_event` raises :class:`~dsh.core.errors.InvariantError` naming the
first broken rule, or updates the trace. It is O(1) per event: it runs for every
streamed chunk when the plugin is loaded.

The rules read the typed events themselves (``event.data.turn``); an event of any
other class (another core type, a plugin's registered type, an
:class:`~dsh.core.session.UntypedEvent`) only has to be inside an open turn.
"""

from __future__ import annotations

from dsh.core.errors import InvariantError
from dsh.core.session import (
    AssistantChunkEvent,
    AssistantMessageEvent,
    CompactionEvent,
    SessionEvent,
    StepEndEvent,
    StepStartEvent,
    ToolCallEvent,
    ToolErrorInfo,
    ToolResultData,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
)


class SessionTrace:
    """Where one session's log stands; fresh for an empty log."""

    __slots__ = ("last_seq", "next_step", "next_turn", "open_step", "open_turn", "pending_calls")

    def __init__(self) -> None:
        self.last_seq = -1
        self.open_turn: int | None = None
        self.open_step: int | None = None
        self.next_turn = 1
        self.next_step = 1
        self.pending_calls: set[str] = set()


def _show(value: int | None) -> str:
    return "null" if value is None else str(value)


def _is_crash_closer(data: ToolResultData) -> bool:
    """A result synthesized by crash repair: it answers a call the log may not hold."""
    error = data.error
    return data.is_error and type(error) is ToolErrorInfo and error.code == "interrupted"


def check_event(trace: SessionTrace, event: SessionEvent) -> None:
    """Check ``event`` against ``trace`` and advance it; raise InvariantError on a violation.

    The ``seq`` is recorded once it is known to increase, even if a later rule then
    fails (the event is already in the log).
    """
    seq = event.seq
    if seq <= trace.last_seq:
        raise InvariantError(f"seq must strictly increase: saw {seq} after {trace.last_seq}")
    trace.last_seq = seq
    if type(event) is AssistantChunkEvent:  # by far the most frequent event: checked first, inline
        chunk = event.data
        if trace.open_step is None or chunk.turn != trace.open_turn or chunk.step != trace.open_step:
            _in_open_step(trace, "assistant/chunk", chunk.turn, chunk.step)  # raises, naming the mismatch
    elif type(event) is TurnStartEvent:
        turn = event.data.turn
        if trace.open_turn is not None:
            raise InvariantError(f"turn/start {turn} while turn {trace.open_turn} is still open")
        if turn != trace.next_turn:
            raise InvariantError(f"turn/start expected turn {trace.next_turn}, got {turn}")
        trace.open_turn = turn
        trace.next_step = 1
    elif type(event) is TurnEndEvent:
        turn = event.data.turn
        if trace.open_turn is None or turn != trace.open_turn:
            raise InvariantError(f"turn/end {turn} does not match open turn {_show(trace.open_turn)}")
        if trace.open_step is not None:
            raise InvariantError(f"turn/end {turn} while step {trace.open_step} is still open")
        trace.open_turn = None
        trace.next_turn += 1
    elif type(event) is StepStartEvent:
        turn = event.data.turn
        step = event.data.step
        if trace.open_turn is None or turn != trace.open_turn:
            raise InvariantError(f"step/start in turn {turn} but open turn is {_show(trace.open_turn)}")
        if trace.open_step is not None:
            raise InvariantError(f"step/start {step} while step {trace.open_step} is still open")
        if step != trace.next_step:
            raise InvariantError(f"step/start expected step {trace.next_step} in turn {turn}, got {step}")
        trace.open_step = step
    elif type(event) is StepEndEvent:
        _in_open_step(trace, "step/end", event.data.turn, event.data.step)
        trace.pending_calls.clear()
        trace.open_step = None
        trace.next_step += 1
    elif type(event) is AssistantMessageEvent:
        _in_open_step(trace, "assistant/message", event.data.turn, event.data.step)
    elif type(event) is ToolCallEvent:
        call = event.data
        _in_open_step(trace, "tool/call", call.turn, call.step)
        trace.pending_calls.add(call.call_id)
    elif type(event) is ToolResultEvent:
        result = event.data
        _in_open_step(trace, "tool/result", result.turn, result.step)
        if result.call_id in trace.pending_calls:
            trace.pending_calls.remove(result.call_id)
        elif not _is_crash_closer(result):
            raise InvariantError(f"tool/result for {result.call_id} with no prior tool/call in this step")
    elif trace.open_turn is None and type(event) is not CompactionEvent:  # a manual compaction may come between turns
        raise InvariantError(f"{event.type} appended outside any open turn (every event must be turn-enclosed)")


def _in_open_step(trace: SessionTrace, kind: str, turn: int, step: int) -> None:
    if trace.open_step is None or turn != trace.open_turn or step != trace.open_step:
        raise InvariantError(
            f"{kind} names turn {turn}/step {step} "
            f"but open is turn {_show(trace.open_turn)}/step {_show(trace.open_step)}"
        )
