"""The plugin's smaller paths: the meter, log views, prune fallbacks, aborts, listeners that throw."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import pytest

from dsh.core.agent import AgentOptions
from dsh.core.errors import LlmError
from dsh.core.llm import LLM, GenerateOptions, LlmService, StreamChunk, TextBlock, TokenUsage, text
from dsh.core.session import CompactionEvent, Session
from dsh.kernel import Context
from dsh.plugins.compaction import AGENT_COMPACTION, COMPACTION, Compaction, Meter, estimate_request
from dsh.plugins.compaction.history import log_view
from dsh.testing.harness import Harness
from dsh.testing.logs import data_json
from dsh.testing.scripted import ScriptedModel, text_response
from tests.core.session.helpers import step, turn_start, user_message
from tests.plugins.compaction.helpers import GrowingModel, register_probe

LONG = "a long answer with many words. " * 40


def test_the_meter_adds_an_estimate_of_the_new_messages_to_the_provider_measure() -> None:
    session = Session("s")
    session.append("turn/start", turn_start(1))
    session.append("user/message", user_message("hi"))
    meter = Meter()
    first = GenerateOptions(model="m", messages=session.derive_messages(), system="sys")
    assert meter.measure(session, first) == estimate_request("sys", None, first.messages)
    meter.sent(session, first, 40)
    session.append("step/start", step(1, 1))
    session.append(
        "usage", {"turn": 1, "step": 1, "usage": {"inputTokens": 100, "outputTokens": 7, "cacheReadTokens": 50}}
    )
    session.append("assistant/message", {"turn": 1, "step": 1, "content": [{"type": "text", "text": "x" * 40}]})
    session.append("user/message", user_message("y" * 400))
    later = GenerateOptions(model="m", messages=session.derive_messages(), system="sys")
    assert meter.measure(session, later) == 157 + estimate_request(None, None, later.messages[2:])
    meter.reset()
    assert meter.measure(session, later) == estimate_request("sys", None, later.messages)


def test_without_provider_usage_the_meter_adds_the_new_messages_to_the_previous_measure() -> None:
    session = Session("s")
    session.append("turn/start", turn_start(1))
    session.append("user/message", user_message("hi"))
    meter = Meter()
    request = GenerateOptions(model="m", messages=session.derive_messages())
    meter.sent(session, request, 25)
    session.append("user/message", user_message("more"))
    later = GenerateOptions(model="m", messages=session.derive_messages())
    assert meter.measure(session, later) == 25 + estimate_request(None, None, later.messages[1:])
    meter.sent(session, later, None)  # not measured (just compacted): the next one is estimated whole
    session.append("user/message", user_message("again"))
    last = GenerateOptions(model="m", messages=session.derive_messages())
    assert meter.measure(session, last) == estimate_request(None, None, last.messages)
    meter.seq = 0  # a log read from its start holds no usage either
    assert meter.measure(session, last) == estimate_request(None, None, last.messages)


def test_a_log_view_follows_a_cut_without_a_summary() -> None:
    session = Session("s")
    session.append("turn/start", turn_start(1))
    session.append("user/message", user_message("hi"))
    session.append("compaction", {"trigger": "manual", "keptFrom": 1})
    session.append("compaction", {"trigger": "manual", "keptFrom": 0, "error": "failed"})
    assert log_view(session.events).kept_from == 1


async def pressure_stack(h: Harness, summary: object, window: int = 2_000) -> GrowingModel:
    await h.ctx.plugin(Compaction, {"contextWindow": window, "pruneChars": 1000, "keepChars": 100})
    register_probe(h, size=1400)
    model = GrowingModel(30, summary=summary)  # type: ignore[arg-type]
    model.load(h, 40)
    return model


async def test_when_the_summary_fails_the_pruning_alone_is_kept() -> None:
    def refuse(_options: GenerateOptions) -> list[StreamChunk]:
        raise LlmError("no summaries today", "SERVER")

    async with Harness(loop_config={"agents": [], "maxSteps": 40}) as h:
        model = await pressure_stack(h, refuse)
        agent = h.agent()
        agent.send([text("go")])
        await agent.when_idle()
        compactions = [e.data for e in agent.session.events if type(e) is CompactionEvent]
    assert model.summaries  # a summary was asked for, and failed
    assert compactions
    assert all(data.pruned and data.summary is data.kept_from for data in compactions)


async def test_an_abort_during_the_summary_request_ends_the_turn_aborted() -> None:
    async with Harness(loop_config={"agents": [], "maxSteps": 40}) as h:
        holder: dict[str, object] = {}

        def abort_then_fail(_options: GenerateOptions) -> list[StreamChunk]:
            holder["agent"].abort("stop")  # type: ignore[attr-defined]
            raise LlmError("connection closed", "STREAM_CLOSED")

        await pressure_stack(h, abort_then_fail, window=1_000)
        agent = h.agent()
        holder["agent"] = agent
        agent.send([text("go")])
        await agent.when_idle()
        reasons = [data["reason"] for data in data_json(agent.session, "turn/end")]
        errors = [e.data.error for e in agent.session.events if type(e) is CompactionEvent and e.data.error]
    assert reasons == [{"kind": "aborted", "reason": "stop"}]
    assert errors == []  # an aborted attempt is no failure


async def test_a_throwing_notice_listener_is_logged_and_the_compaction_stands(caplog: pytest.LogCaptureFixture) -> None:
    async with Harness() as h:
        await h.ctx.plugin(Compaction, {})

        def boom(*_args: object) -> None:
            raise RuntimeError("listener broke")

        h.ctx.on(AGENT_COMPACTION, boom)
        h.model.push(text_response(LONG), text_response(LONG), text_response("short"))
        agent = h.agent()
        for prompt in ("a", "b"):
            agent.send([text(prompt)])
            await agent.when_idle()
        with caplog.at_level(logging.WARNING):
            result = await h.ctx[COMPACTION].compact(agent)  # type: ignore[arg-type]
    assert result.compacted
    assert "agent/compaction listener threw: listener broke" in caplog.text


@dataclass
class BareAgent:
    """The agent shape compaction reads, for a tree without a system-prompt service."""

    session: Session
    options: AgentOptions
    id: str = "bare"
    status: str = "idle"


async def test_without_a_system_prompt_service_the_agent_prompt_alone_is_the_prefix() -> None:
    ctx = Context()
    await ctx.plugin(LlmService)
    model = ScriptedModel([text_response("the summary")])
    ctx[LLM].register_adapter(["mock"], model)
    await ctx.plugin(Compaction, {})
    session = Session("s")
    for turn in (1, 2):
        session.append("turn/start", turn_start(turn))
        session.append("user/message", user_message(LONG))
        session.append("step/start", step(turn, 1))
        session.append("assistant/message", {"turn": turn, "step": 1, "content": [{"type": "text", "text": LONG}]})
        session.append("step/end", step(turn, 1))
        session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    agent = BareAgent(session, AgentOptions(model="mock", system_prompt="Only this."))
    result = await ctx[COMPACTION].compact(agent)  # type: ignore[arg-type]
    await ctx.dispose()
    assert result.compacted
    assert model.requests[0].system == "Only this."
    assert model.requests[0].tools is None
    assert session.derive_messages()[0].content[0] == TextBlock(text=result.event.data.summary)  # type: ignore[union-attr]
    assert result.event.data.usage == TokenUsage(input_tokens=10, output_tokens=11)  # type: ignore[union-attr]
