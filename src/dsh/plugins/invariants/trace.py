"""The session-log contract, checked one event at a time (SPEC §13).

A :class:`SessionTrace` is the little state needed to judge the next event of one
session: the last ``seq``, the open turn and step, the numbers the next turn and
step must carry, and the tool calls of the open step still owed a result.
:func:`check_event` raises :class:`~dsh.core.errors.InvariantError` naming the
first broken rule, or updates the trace. It is O(1) per event: it runs for every
streamed chunk when the plugin is loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from dsh.core.errors import InvariantError

_STEP_SCOPED = frozenset({"step/end", "assistant/message", "tool/call", "tool/result"})
_NO_DATA: Mapping[str, Any] = MappingProxyType({})
_MAPPINGS = (dict, Mapping)  # a tuple: ``dict | Mapping`` would build a union object on every call


class SessionTrace:
    """Where one session's log stands; fresh for an empty log."""

    __slots__ = ("last_seq", "next_step", "next_turn", "open_step", "open_turn", "pending_calls")

    def __init__(self) -> None:
        self.last_seq = -1
        self.open_turn: Any = None
        self.open_step: Any = None
        self.next_turn = 1
        self.next_step = 1
        self.pending_calls: set[str] = set()


def _show(value: object) -> str:
    return "null" if value is None else str(value)


def _is_crash_closer(data: Mapping[str, Any]) -> bool:
    """A result synthesized by crash repair: it answers a call the log may not hold."""
    error = data.get("error")
    return data.get("isError") is True and isinstance(error, Mapping) and error.get("code") == "interrupted"


def check_event(trace: SessionTrace, event: Mapping[str, Any]) -> None:
    """Check ``event`` against ``trace`` and advance it; raise InvariantError on a violation.

    The ``seq`` is recorded once it is known to increase, even if a later rule then
    fails (the event is already in the log).
    """
    seq = event.get("seq")
    if not isinstance(seq, int) or seq <= trace.last_seq:
        raise InvariantError(f"seq must strictly increase: saw {_show(seq)} after {trace.last_seq}")
    trace.last_seq = seq
    kind = event.get("type")
    raw = event.get("data")
    data: Mapping[str, Any] = raw if isinstance(raw, _MAPPINGS) else _NO_DATA
    if kind == "assistant/chunk":  # by far the most frequent event: checked first, inline
        if trace.open_step is None or data.get("turn") != trace.open_turn or data.get("step") != trace.open_step:
            _check_step_scoped(trace, kind, data)  # raises, naming the mismatch
    elif kind == "turn/start":
        turn = data.get("turn")
        if trace.open_turn is not None:
            raise InvariantError(f"turn/start {_show(turn)} while turn {trace.open_turn} is still open")
        if turn != trace.next_turn:
            raise InvariantError(f"turn/start expected turn {trace.next_turn}, got {_show(turn)}")
        trace.open_turn = turn
        trace.next_step = 1
    elif kind == "turn/end":
        turn = data.get("turn")
        if trace.open_turn is None or turn != trace.open_turn:
            raise InvariantError(f"turn/end {_show(turn)} does not match open turn {_show(trace.open_turn)}")
        if trace.open_step is not None:
            raise InvariantError(f"turn/end {_show(turn)} while step {trace.open_step} is still open")
        trace.open_turn = None
        trace.next_turn += 1
    elif kind == "step/start":
        turn = data.get("turn")
        step = data.get("step")
        if trace.open_turn is None or turn != trace.open_turn:
            raise InvariantError(f"step/start in turn {_show(turn)} but open turn is {_show(trace.open_turn)}")
        if trace.open_step is not None:
            raise InvariantError(f"step/start {_show(step)} while step {trace.open_step} is still open")
        if step != trace.next_step:
            raise InvariantError(f"step/start expected step {trace.next_step} in turn {turn}, got {_show(step)}")
        trace.open_step = step
    elif kind in _STEP_SCOPED:
        _check_step_scoped(trace, kind, data)
    elif trace.open_turn is None:
        raise InvariantError(f"{_show(kind)} appended outside any open turn (every event must be turn-enclosed)")


def _check_step_scoped(trace: SessionTrace, kind: str, data: Mapping[str, Any]) -> None:
    turn = data.get("turn")
    step = data.get("step")
    if trace.open_step is None or turn != trace.open_turn or step != trace.open_step:
        raise InvariantError(
            f"{kind} names turn {_show(turn)}/step {_show(step)} "
            f"but open is turn {_show(trace.open_turn)}/step {_show(trace.open_step)}"
        )
    if kind == "step/end":
        trace.pending_calls.clear()
        trace.open_step = None
        trace.next_step += 1
    elif kind == "tool/call":
        call_id = data.get("callId")
        if isinstance(call_id, str):
            trace.pending_calls.add(call_id)
    elif kind == "tool/result":
        call_id = data.get("callId")
        if isinstance(call_id, str) and call_id in trace.pending_calls:
            trace.pending_calls.remove(call_id)
        elif not _is_crash_closer(data):
            raise InvariantError(f"tool/result for {_show(call_id)} with no prior tool/call in this step")
