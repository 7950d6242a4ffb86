"""ACP ``usage_update``: a session's context use and cost after each model step.

ACP's ``usage_update`` says how full the context is (``used`` of ``size`` tokens) and
what the session cost so far (``cost``: ``{amount, currency}``, optional). ``used`` is
the last model request's prompt (uncached input, cache reads and writes) plus what it
generated: what the next request starts from. ``size`` is the model's context window,
from the ``contextWindows`` table of the ``acp`` config over
:data:`~dsh.core.usage.DEFAULT_CONTEXT_WINDOWS` (the table compaction reads too);
for a model with no known window no update is sent (the field is required). ``cost``
sums the session's own ``usage`` events (a fork's copied prefix is the source's) at the
current model's price (:data:`~dsh.core.usage.DEFAULT_PRICES`), in ``USD``; it is left
out for a model without a price.

A :class:`UsageTally` per session keeps the running totals, so an update costs one
addition per step (never a walk over the log); it is seeded from the log on load.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dsh.core.llm import TokenUsage
from dsh.core.session import SessionEvent, UsageEvent
from dsh.core.usage import DEFAULT_PRICES, TokenTotals, cost_of


def _in_context(usage: TokenUsage) -> int:
    return usage.input_tokens + (usage.cache_read_tokens or 0) + (usage.cache_write_tokens or 0) + usage.output_tokens


class UsageTally:
    """One session's running usage: the totals of its own steps and the last step's context size."""

    def __init__(self, events: Sequence[SessionEvent] = (), start: int = 0) -> None:
        self.tokens = TokenTotals()
        self.used: int | None = None
        for event in events[start:]:
            if type(event) is UsageEvent:
                self.add(event.data.usage)

    def add(self, usage: TokenUsage) -> None:
        """Count one step's usage."""
        self.tokens = self.tokens.plus(usage)
        self.used = _in_context(usage)

    def update(self, model: str | None, windows: Mapping[str, int]) -> dict[str, Any] | None:
        """The ``usage_update`` for the session now, or None (no step yet, or no known window)."""
        if self.used is None or model is None:
            return None
        size = windows.get(model)
        if size is None:
            return None
        update: dict[str, Any] = {"sessionUpdate": "usage_update", "used": self.used, "size": size}
        price = DEFAULT_PRICES.get(model)
        if price is not None:
            update["cost"] = {"amount": round(cost_of(self.tokens, price), 10), "currency": "USD"}
        return update
