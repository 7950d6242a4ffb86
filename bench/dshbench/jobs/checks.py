"""Checks that a measured run did what it was meant to: numbers of a failed run are never reported."""

from __future__ import annotations

from collections.abc import Sequence

from dsh.core.llm import to_json
from dsh.core.session import (
    CompletedReason,
    ErrorEvent,
    Session,
    ToolResultEvent,
    TurnEndEvent,
    TurnEndReason,
)


class BenchRunError(Exception):
    """A measured run ended differently than planned; the message says what happened."""


def _turn_failure(session: Session, turn_end: TurnEndReason) -> str:
    errors = [event.data for event in session.events if type(event) is ErrorEvent]
    detail = f"; error events: {to_json(errors[-1])}" if errors else ""
    return f'session "{session.id}": turn ended {to_json(turn_end)}{detail}'


def completed_turns(session: Session) -> int:
    """The number of turns of ``session``; raises unless every one ended ``completed``."""
    ends = [event.data for event in session.events if type(event) is TurnEndEvent]
    for end in ends:
        if type(end.reason) is not CompletedReason:
            raise BenchRunError(_turn_failure(session, end.reason))
    return len(ends)


def count(session: Session, kind: str) -> int:
    """How many events of type ``kind`` the log holds."""
    return sum(1 for event in session.events if event.type == kind)


def expect_turn(session: Session, *, turns: int, steps: int | None = None, tools_ok: bool = True) -> None:
    """Raise :class:`BenchRunError` unless the log shows ``turns`` completed turns (and ``steps`` steps).

    With ``tools_ok`` every ``tool/result`` must be a success.
    """
    done = completed_turns(session)
    if done != turns:
        raise BenchRunError(f'session "{session.id}": {done} completed turns, expected {turns}')
    if steps is not None and (seen := count(session, "step/start")) != steps:
        raise BenchRunError(f'session "{session.id}": {seen} steps, expected {steps}')
    if tools_ok:
        failed = [e.data for e in session.events if type(e) is ToolResultEvent and e.data.is_error]
        if failed:
            first = to_json(failed[0])
            raise BenchRunError(f'session "{session.id}": {len(failed)} tool calls failed, first: {first}')


def expect_all(sessions: Sequence[Session], *, turns: int) -> int:
    """Check every session completed ``turns`` turns; return the total number of steps."""
    for session in sessions:
        expect_turn(session, turns=turns)
    return sum(count(session, "step/start") for session in sessions)
