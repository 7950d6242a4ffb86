"""Where a session may be forked: the end of a completed turn (SPEC §3.4, fork).

A fork copies a prefix of a source log into a new session. The prefix must end right
after a ``turn/end``: cutting inside a turn would copy an open turn (an open step,
tool calls without results) that the fork never closes, so a cut point that is not
the end of a completed turn is refused, never silently moved. Pure functions over
the logged events; :meth:`~dsh.core.session.SessionStore.fork` and the persistence
service's ``fork`` share them.
"""

from __future__ import annotations

from collections.abc import Sequence

from dsh.core.errors import HarnessError
from dsh.core.session.types import SessionEvent, TurnEndEvent, TurnStartEvent


def fork_point(events: Sequence[SessionEvent], at_turn: int | None = None) -> int:
    """How many of ``events`` a fork at the end of turn ``at_turn`` copies (default: the last completed turn).

    The count includes the ``turn/end`` of that turn; events logged after it (a later
    turn, a between-turn event) are left out. Raises ``HarnessError`` with code
    ``INVALID_FORK`` when the log holds no completed turn, when ``at_turn`` is no turn
    of the log, and when turn ``at_turn`` never ended; the message names the turns
    that can be forked.
    """
    ends = {event.data.turn: index + 1 for index, event in enumerate(events) if type(event) is TurnEndEvent}
    if at_turn is None:
        if not ends:
            raise HarnessError("the session has no completed turn to fork at (finish a turn first)", "INVALID_FORK")
        return max(ends.values())
    if at_turn in ends:
        return ends[at_turn]
    choices = f"completed turns: {', '.join(map(str, sorted(ends)))}" if ends else "no turn is completed yet"
    started = any(type(event) is TurnStartEvent and event.data.turn == at_turn for event in events)
    if started:
        raise HarnessError(f"turn {at_turn} is not completed, so it cannot be forked at ({choices})", "INVALID_FORK")
    raise HarnessError(f"the session has no turn {at_turn} to fork at ({choices})", "INVALID_FORK")


def fork_prefix(events: Sequence[SessionEvent], at_turn: int | None = None) -> list[SessionEvent]:
    """The events a fork at the end of turn ``at_turn`` copies (see :func:`fork_point`).

    The events are the logged immutable values themselves (shared, not copied); their
    ``seq`` run ``0..n-1``, so they seed a new session as they are.
    """
    return list(events[: fork_point(events, at_turn)])
