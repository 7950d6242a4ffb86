"""The ``budget`` plugin: end a turn once its session has cost ``maxCost`` US dollars.

Before every model call (``agent/step-start``) it prices what the agent's session has
spent so far, from the logged ``usage`` events after a fork's copied prefix (the
source's spending is not this session's) and its sub-agents' usage (``subagent/end``),
at the price of the agent's model
(``model`` in the config overrides it). When that reaches ``maxCost`` the listener
raises :class:`~dsh.core.agent.EndTurn`: the step closes without asking the model and
the turn ends with reason ``{"kind": "max-cost", "limit": ..., "cost": ...}``. Every
later turn of that session ends the same way, before any model call. A model without
a price fails the turn with ``NO_PRICE``, naming the config to add.

Prices: :data:`~dsh.core.usage.DEFAULT_PRICES` (DeepSeek's), with ``prices`` entries
(``{model: {input, output, cacheRead, cacheWrite?}}``, US dollars per million tokens)
added over them. The running totals are kept per session, weakly, and read only the
events appended since the previous step.
"""

from __future__ import annotations

import weakref

from pydantic import BaseModel, ConfigDict, Field

from dsh.core.agent import AGENT_STEP_START, Agent, EndTurn
from dsh.core.errors import HarnessError
from dsh.core.session import MaxCostReason, Session, UsageEvent
from dsh.core.usage import DEFAULT_PRICES, ModelPrice, TokenTotals, cost_of, delegated_usage, own_start
from dsh.kernel import Context

name = "budget"
inject: list[str] = []


class PriceConfig(BaseModel):
    """One model's prices in US dollars per million tokens (``cacheWrite`` defaults to ``input``)."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float = Field(ge=0, alias="cacheRead")
    cache_write: float | None = Field(default=None, ge=0, alias="cacheWrite")

    def price(self) -> ModelPrice:
        """The typed value."""
        if self.cache_write is None:
            return ModelPrice(input=self.input, output=self.output, cache_read=self.cache_read)
        return ModelPrice(
            input=self.input, output=self.output, cache_read=self.cache_read, cache_write=self.cache_write
        )


class Config(BaseModel):
    """``maxCost`` (US dollars, > 0), optional ``model`` and ``prices``; see the module docstring."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    max_cost: float = Field(gt=0, alias="maxCost")
    model: str | None = None
    prices: dict[str, PriceConfig] = Field(default_factory=dict)


class _Meter:
    """A session's token totals over the events read so far."""

    __slots__ = ("read", "totals")

    def __init__(self, start: int) -> None:
        self.read = start
        self.totals = TokenTotals()

    def update(self, session: Session) -> TokenTotals:
        events = session.events
        totals = self.totals
        for event in events[self.read :]:
            if type(event) is UsageEvent:
                totals = totals.plus(event.data.usage)
            else:
                child = delegated_usage(event)  # a sub-agent's usage, rolled up into this log
                if child is not None:
                    totals = totals.plus(child)
        self.read = len(events)
        self.totals = totals
        return totals


def apply(ctx: Context, config: Config) -> None:
    """Install the check before every model call; it goes with ``ctx``'s fiber."""
    prices: dict[str, ModelPrice] = {
        **DEFAULT_PRICES,
        **{model: entry.price() for model, entry in config.prices.items()},
    }
    meters: weakref.WeakKeyDictionary[Session, _Meter] = weakref.WeakKeyDictionary()
    limit = config.max_cost

    def before_model_call(agent: Agent, turn: int, step: int) -> None:
        model = config.model or agent.options.model
        price = prices.get(model) if model is not None else None
        if price is None:
            raise HarnessError(
                f'budget: no price for model "{model}": add it to the budget plugin config as '
                "prices: {MODEL: {input: ..., output: ..., cacheRead: ...}} (US dollars per million tokens)",
                "NO_PRICE",
            )
        session = agent.session
        meter = meters.get(session)
        if meter is None:
            meter = meters[session] = _Meter(own_start(session.header))
        cost = cost_of(meter.update(session), price)
        if cost >= limit:
            raise EndTurn(MaxCostReason(limit=limit, cost=cost))

    ctx.on(AGENT_STEP_START, before_model_call)
