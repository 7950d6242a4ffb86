"""Usage and cost from a log: summarize_usage, cost_of, own_start and the default prices."""

from __future__ import annotations

import math

import msgspec
import pytest

from dsh.core.llm import TokenUsage, UserSource, encode, text
from dsh.core.session import (
    SESSION_FORMAT_VERSION,
    ContinuationTrigger,
    MessageData,
    Session,
    SessionHeader,
    StepData,
    StepStartEvent,
    TurnStartData,
    TurnStartEvent,
    UsageData,
    UsageEvent,
    UserMessageEvent,
)
from dsh.core.usage import (
    DEFAULT_PRICES,
    PER_PRICE_UNIT,
    ModelPrice,
    TokenTotals,
    TurnUsage,
    cost_of,
    own_start,
    summarize_usage,
)

PRICE = ModelPrice(input=2.0, output=8.0, cache_read=0.5)


def _session() -> Session:
    """Two turns: turn 1 with two steps (one usage each), turn 2 with one step and no usage."""
    session = Session("s")
    session.append(TurnStartEvent, TurnStartData(turn=1, trigger=ContinuationTrigger()))
    session.append(UserMessageEvent, MessageData(content=(text("hi"),), source=UserSource()))
    session.append(StepStartEvent, StepData(turn=1, step=1))
    session.append(UsageEvent, UsageData(turn=1, step=1, usage=TokenUsage(input_tokens=100, output_tokens=10)))
    session.append(StepStartEvent, StepData(turn=1, step=2))
    usage = TokenUsage(
        input_tokens=20, output_tokens=30, cache_read_tokens=1000, cache_write_tokens=40, reasoning_tokens=7
    )
    session.append(UsageEvent, UsageData(turn=1, step=2, usage=usage))
    session.append(TurnStartEvent, TurnStartData(turn=2, trigger=ContinuationTrigger()))
    session.append(StepStartEvent, StepData(turn=2, step=1))
    return session


def test_tokens_are_summed_per_turn_and_per_session() -> None:
    summary = summarize_usage(_session().events)
    first = TokenTotals(
        input_tokens=120, output_tokens=40, cache_read_tokens=1000, cache_write_tokens=40, reasoning_tokens=7
    )
    assert summary.turns == (
        TurnUsage(turn=1, steps=2, tokens=first),
        TurnUsage(turn=2, steps=1, tokens=TokenTotals()),
    )
    assert summary.steps == 3
    assert summary.tokens == first
    assert summary.cost is msgspec.UNSET
    assert summary.turns[0].cost is msgspec.UNSET


def test_costs_price_each_kind_of_token_and_cache_writes_default_to_the_input_price() -> None:
    summary = summarize_usage(_session().events, PRICE)
    expected = (120 * 2.0 + 1000 * 0.5 + 40 * 2.0 + 40 * 8.0) / PER_PRICE_UNIT
    assert math.isclose(summary.turns[0].cost, expected)  # type: ignore[arg-type]
    assert summary.turns[1].cost == 0.0
    assert math.isclose(summary.cost, expected)  # type: ignore[arg-type]
    priced_writes = ModelPrice(input=2.0, output=8.0, cache_read=0.5, cache_write=3.0)
    assert math.isclose(cost_of(TokenTotals(cache_write_tokens=1_000_000), priced_writes), 3.0)


def test_start_leaves_out_a_prefix_and_counts_a_usage_of_a_turn_begun_before_it() -> None:
    events = _session().events
    summary = summarize_usage(events, start=4)  # from turn 1's second step
    assert [(turn.turn, turn.steps) for turn in summary.turns] == [(1, 1), (2, 1)]
    assert summary.tokens.input_tokens == 20
    late = summarize_usage(events, start=5)  # only turn 1's usage event, not its step/start
    assert (late.turns[0].turn, late.turns[0].steps) == (1, 0)


def test_own_start_is_the_seed_length_of_a_fork() -> None:
    header = SessionHeader(version=SESSION_FORMAT_VERSION, id="f", created_at=0)
    assert own_start(header) == 0
    assert own_start(msgspec.structs.replace(header, parent_session="s", seed_length=12)) == 12


def test_the_summary_is_camel_case_json() -> None:
    summary = summarize_usage(_session().events[:4], PRICE)
    assert encode(summary).startswith(b'{"turns":[{"turn":1,"steps":1,"tokens":{"inputTokens":100,')


@pytest.mark.parametrize("model", ["deepseek-v4-flash", "deepseek-chat", "deepseek-reasoner", "deepseek-v4-pro"])
def test_the_default_prices_cover_the_deepseek_models(model: str) -> None:
    price = DEFAULT_PRICES[model]
    assert 0 < price.cache_read < price.input < price.output
    assert price.cache_write is msgspec.UNSET
