"""Prompt settlement: which turn answers a ``session/prompt``, and with which stop reason.

A prompt installs its :class:`Inflight` marker (with the log length as a watermark)
before ``agent.send``; the first message-triggered ``turn/start`` after that is the
owning turn (:meth:`Inflight.observe`), and its ``turn/end`` settles the prompt exactly
once: an ``error`` end rejects it with ``Internal error: turn failed: <message>``,
every other end answers its stop reason. When a peer listener starved the bridge of
those events, :func:`reconcile` settles from the log instead; ``session/cancel``
settles ``cancelled`` at once (:func:`resolve`), so the cancelled turn's late end is
ignored.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

from dsh.acp.codec import StopReason, turn_end_to_stop_reason
from dsh.acp.rpc import internal_error
from dsh.acp.stream import TerminalContext, ToolPresenter
from dsh.core.agent import Agent
from dsh.core.session import (
    ErrorReason,
    MessageTrigger,
    SessionEvent,
    TurnEndEvent,
    TurnEndReason,
    TurnStartEvent,
)
from dsh.kernel import Fiber


@dataclass
class Inflight:
    """The one prompt a session is running: its answer, its owning turn once seen, the log watermark."""

    answer: asyncio.Future[StopReason]
    log_watermark: int
    turn: int | None = None


@dataclass
class SessionRecord:
    """One live ACP session; ``owner`` is the child fiber its agent belongs to.

    ``terminal`` (whether tool calls render as terminal cards, and the session's cwd)
    is fixed when the session is registered: neither changes for a session.
    """

    session_id: str
    agent: Agent
    presenter: ToolPresenter
    terminal: TerminalContext
    owner: Fiber
    inflight: Inflight | None = field(default=None)


def message_turn(event: SessionEvent) -> int | None:
    """The turn number of a message-triggered ``turn/start``; None for any other event."""
    if type(event) is TurnStartEvent and type(event.data.trigger) is MessageTrigger:
        return event.data.turn
    return None


def _first_message_turn(events: Sequence[SessionEvent], start: int) -> int | None:
    for event in events[start:]:
        turn = message_turn(event)
        if turn is not None:
            return turn
    return None


def _turn_end(events: Sequence[SessionEvent], turn: int) -> TurnEndReason | None:
    for event in reversed(events):
        if type(event) is TurnEndEvent and event.data.turn == turn:
            return event.data.reason
    return None


def resolve(record: SessionRecord, stop: StopReason) -> None:
    """Settle the session's pending prompt (if any) with ``stop`` and free the slot."""
    inflight, record.inflight = record.inflight, None
    if inflight is not None:
        inflight.answer.set_result(stop)


def settle(record: SessionRecord, inflight: Inflight, reason: TurnEndReason) -> None:
    """Settle ``inflight`` (the session's pending prompt) from its turn's end reason."""
    record.inflight = None
    if type(reason) is ErrorReason:
        inflight.answer.set_exception(internal_error(f"turn failed: {reason.message}"))
    else:
        inflight.answer.set_result(turn_end_to_stop_reason(reason))


def observe(record: SessionRecord, event: SessionEvent) -> None:
    """Follow the session's pending prompt (if any) through one live event of its log."""
    inflight = record.inflight
    if inflight is None:
        return
    if inflight.turn is None:
        inflight.turn = message_turn(event)
    elif type(event) is TurnEndEvent and event.data.turn == inflight.turn:
        settle(record, inflight, event.data.reason)


def reconcile(record: SessionRecord, inflight: Inflight) -> None:
    """Settle a prompt from the log when its turn events never reached the bridge.

    The owning turn is the captured one, else the first message-triggered turn
    logged since the prompt was installed; its last ``turn/end`` settles the
    prompt, and without one (no such turn, or it never ended) it is ``cancelled``.
    """
    events = record.agent.session.events
    turn = inflight.turn if inflight.turn is not None else _first_message_turn(events, inflight.log_watermark)
    end = _turn_end(events, turn) if turn is not None else None
    if end is None:
        resolve(record, "cancelled")
    else:
        settle(record, inflight, end)
