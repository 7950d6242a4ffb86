"""Usage and cost from a session log: pure functions over the logged events.

The log is the truth: every model step that reported usage logged a ``usage`` event
``{turn, step, usage}``, so any front end (or a fresh process reading a stored log)
sums the same numbers. Steps are counted from ``step/start`` events, turns from
``turn/start`` events. A sub-agent's usage rolls up from the ``subagent/end`` event its
parent's log holds (``data.usage``, the child's token totals), counted in the turn that
event is logged in.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from msgspec import UNSET, UnsetType

from dsh.core.session import (
    SessionEvent,
    SessionHeader,
    StepStartEvent,
    TurnStartEvent,
    UntypedEvent,
    UsageEvent,
    last_turn_number,
)
from dsh.core.usage.types import ModelPrice, TokenTotals, TurnUsage, UsageSummary

PER_PRICE_UNIT = 1_000_000
"""Prices are per million tokens."""

SUBAGENT_END = "subagent/end"
"""The log event with a finished sub-agent's usage (``data.usage``: :class:`TokenTotals` JSON)."""


def delegated_usage(event: SessionEvent) -> TokenTotals | None:
    """The child's token totals a ``subagent/end`` event carries, else None.

    Works for the typed event (``data.usage``) and for one read without its plugin
    loaded (an :class:`~dsh.core.session.UntypedEvent`); malformed usage counts as none.
    """
    if event.type != SUBAGENT_END:
        return None
    if type(event) is UntypedEvent:
        raw = event.data.get("usage") if isinstance(event.data, dict) else None
        try:
            return msgspec.convert(raw, TokenTotals)
        except msgspec.ValidationError:
            return None
    usage = getattr(getattr(event, "data", None), "usage", None)
    return usage if isinstance(usage, TokenTotals) else None


def cost_of(tokens: TokenTotals, price: ModelPrice) -> float:
    """What ``tokens`` cost at ``price``, in US dollars."""
    write = price.input if price.cache_write is UNSET else price.cache_write
    return (
        tokens.input_tokens * price.input
        + tokens.cache_read_tokens * price.cache_read
        + tokens.cache_write_tokens * write
        + tokens.output_tokens * price.output
    ) / PER_PRICE_UNIT


def own_start(header: SessionHeader) -> int:
    """Where a session's own events begin: after a fork's copied prefix (``seed_length``), else 0."""
    return header.seed_length or 0


def summarize_usage(events: Sequence[SessionEvent], price: ModelPrice | None = None, *, start: int = 0) -> UsageSummary:
    """The usage of ``events[start:]``, per turn and in total; costs at ``price`` (``UNSET`` without one).

    Pass ``start=own_start(header)`` to leave out what a fork copied from its source
    (that usage was the source's). A ``usage`` event of a turn whose ``turn/start`` lies
    before ``start`` still counts, under its own turn number. Sub-agents' usage
    (``subagent/end``) is included in the turn and total tokens, and summed apart in
    ``delegated`` (``UNSET`` when no sub-agent ended).
    """
    steps: dict[int, int] = {}
    tokens: dict[int, TokenTotals] = {}
    empty = TokenTotals()
    current = last_turn_number(events[:start]) if start else 0
    delegated: TokenTotals | UnsetType = UNSET
    for event in events[start:]:
        if type(event) is UsageEvent:
            usage = event.data
            steps.setdefault(usage.turn, 0)
            tokens[usage.turn] = tokens.get(usage.turn, empty).plus(usage.usage)
        elif type(event) is StepStartEvent:
            turn = event.data.turn
            steps[turn] = steps.get(turn, 0) + 1
            tokens.setdefault(turn, empty)
        elif type(event) is TurnStartEvent:
            current = turn = event.data.turn
            steps.setdefault(turn, 0)
            tokens.setdefault(turn, empty)
        else:
            child = delegated_usage(event)
            if child is not None:
                steps.setdefault(current, 0)
                tokens[current] = tokens.get(current, empty).plus(child)
                delegated = (delegated if isinstance(delegated, TokenTotals) else empty).plus(child)
    total = empty
    turns: list[TurnUsage] = []
    for turn, counted in tokens.items():
        total = total.plus(counted)
        cost: float | UnsetType = UNSET if price is None else cost_of(counted, price)
        turns.append(TurnUsage(turn=turn, steps=steps[turn], tokens=counted, cost=cost))
    return UsageSummary(
        turns=tuple(turns),
        steps=sum(steps.values()),
        tokens=total,
        cost=UNSET if price is None else cost_of(total, price),
        delegated=delegated,
    )
