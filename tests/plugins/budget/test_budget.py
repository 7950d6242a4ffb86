"""The budget plugin on the real loop: a turn ends with reason max-cost before the model is asked again."""

from __future__ import annotations

import math
from typing import Any

import pytest

from dsh.core.agent import AGENT_STEP_START, AGENT_TURN_END, AgentOptions
from dsh.core.llm import text
from dsh.core.session import CompletedReason, ErrorReason, MaxCostReason, SessionMeta, TurnEndEvent, UsageEvent
from dsh.core.usage import ModelPrice
from dsh.kernel import ConfigError
from dsh.plugins import budget
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response, tool_call_response

PRICES = {"mock": {"input": 1000, "output": 1000, "cacheRead": 100}}
"""$1000 per million tokens: a scripted step of 10 + 5 tokens costs $0.015."""


def _ends(events: Any) -> list[Any]:
    return [event.data.reason for event in events if type(event) is TurnEndEvent]


async def test_the_turn_ends_with_max_cost_before_the_next_model_call() -> None:
    script = [tool_call_response("c1", "missing_tool", {}), text_response("never asked")]
    async with Harness(script) as h:
        await h.ctx.plugin(budget, {"maxCost": 0.01, "prices": PRICES})
        ended: list[Any] = []
        h.ctx.on(AGENT_TURN_END, lambda agent, turn, reason: ended.append(reason))
        agent = h.agent()
        agent.send([text("go")])
        await agent.when_idle()
        assert len(h.model.requests) == 1
        (reason,) = _ends(agent.session.events)
        assert type(reason) is MaxCostReason
        assert reason.limit == 0.01
        assert math.isclose(reason.cost, 0.015)
        assert ended == [reason]
        types = [event.type for event in agent.session.events]
        assert types[-3:] == ["step/start", "step/end", "turn/end"]
        assert "error" not in types
        agent.send([text("again")])  # the session is over budget: the next turn ends at once
        await agent.when_idle()
        assert len(h.model.requests) == 1
        assert [type(reason) for reason in _ends(agent.session.events)] == [MaxCostReason, MaxCostReason]


async def test_under_budget_turns_run_and_the_model_override_prices_them() -> None:
    async with Harness([text_response("a"), text_response("b")]) as h:
        await h.ctx.plugin(budget, {"max_cost": 1.0, "model": "priced", "prices": {"priced": PRICES["mock"]}})
        agent = h.agent()
        for words in ("one", "two"):
            agent.send([text(words)])
            await agent.when_idle()
        assert [type(reason) for reason in _ends(agent.session.events)] == [CompletedReason, CompletedReason]


async def test_a_forks_inherited_spending_is_not_counted() -> None:
    async with Harness([text_response("first"), text_response("second")]) as h:
        await h.ctx.plugin(budget, {"maxCost": 0.01, "prices": PRICES})
        source = h.agent("source")
        source.send([text("one")])
        await source.when_idle()  # $0.015 spent: over budget for the source itself
        assert any(type(event) is UsageEvent for event in source.session.events)
        child = h.sessions.fork(source.session)
        agent = h.loop.start("child", AgentOptions(model="mock"), child)
        agent.send([text("two")])
        await agent.when_idle()
        assert len(h.model.requests) == 2
        assert type(_ends(agent.session.events)[-1]) is CompletedReason


async def test_a_model_without_a_price_fails_the_turn_naming_the_config() -> None:
    async with Harness([text_response("never")]) as h:
        await h.ctx.plugin(budget, {"maxCost": 1})
        agent = h.agent()
        agent.send([text("go")])
        await agent.when_idle()
        (reason,) = _ends(agent.session.events)
        assert type(reason) is ErrorReason
        assert reason.code == "NO_PRICE"
        assert 'no price for model "mock"' in reason.message
        assert "prices:" in reason.message
        assert h.model.requests == []


async def test_an_agent_without_a_model_has_no_price_either() -> None:
    async with Harness() as h:
        await h.ctx.plugin(budget, {"maxCost": 1})
        session = h.sessions.create("s", meta=SessionMeta())
        agent = h.loop.start("nomodel", AgentOptions(), session)
        agent.send([text("go")])
        await agent.when_idle()
        (reason,) = _ends(agent.session.events)
        assert type(reason) is ErrorReason
        assert 'no price for model "None"' in reason.message


async def test_unloading_the_plugin_removes_its_listener_and_bad_budgets_are_refused() -> None:
    async with Harness() as h:
        before = h.ctx.listener_count(AGENT_STEP_START)
        fiber = await h.ctx.plugin(budget, {"maxCost": 0.5})
        assert h.ctx.listener_count(AGENT_STEP_START) == before + 1
        await fiber.dispose()
        assert h.ctx.listener_count(AGENT_STEP_START) == before
        for bad in ({"maxCost": 0}, {"maxCost": 1, "prices": {"m": {"input": -1, "output": 1, "cacheRead": 0}}}):
            with pytest.raises(ConfigError):
                await h.ctx.plugin(budget, bad)


def test_a_price_entry_becomes_the_typed_value() -> None:
    entry = budget.PriceConfig.model_validate({"input": 1, "output": 2, "cacheRead": 0.1})
    assert entry.price() == ModelPrice(input=1, output=2, cache_read=0.1)
    written = budget.PriceConfig.model_validate({"input": 1, "output": 2, "cacheRead": 0.1, "cacheWrite": 1.25})
    assert written.price() == ModelPrice(input=1, output=2, cache_read=0.1, cache_write=1.25)


async def test_a_sub_agents_usage_counts_against_the_parents_budget(tmp_path: Any) -> None:
    from tests.plugins.subagent.helpers import boot, child_model

    script = [
        tool_call_response("c1", "subagent", {"description": "d", "prompt": "p", "model": "mock-child"}),
        text_response("never asked"),
    ]
    async with Harness(script) as h:
        await boot(h, tmp_path)
        child_model(h, "mock-child", text_response("a long child answer " * 20))
        await h.ctx.plugin(budget, {"maxCost": 0.2, "prices": {**PRICES, "mock-child": PRICES["mock"]}})
        agent = h.agent()
        agent.send([text("go")])
        await agent.when_idle()
        assert len(h.model.requests) == 1  # the parent's own step cost $0.015; the child's $0.41 ends the turn
        (reason,) = _ends(agent.session.events)
        assert type(reason) is MaxCostReason
