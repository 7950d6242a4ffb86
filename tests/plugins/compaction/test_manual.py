"""Manual compaction: ``Compaction.compact`` and the ``/compact`` command handler, between turns."""

from __future__ import annotations

import asyncio

import pytest

from dsh.core.agent import AgentOptions
from dsh.core.errors import HarnessError
from dsh.core.llm import text, text_of
from dsh.core.session import CompactionEvent, derive_messages
from dsh.core.system_prompt import PromptSection
from dsh.kernel import ConfigError
from dsh.plugins.compaction import COMPACTION, SUMMARY_HEADER, SUMMARY_INSTRUCTION, Compaction
from dsh.testing.harness import Harness
from dsh.testing.scripted import HANG, text_response
from tests.plugins.compaction.helpers import GrowingModel, register_probe

LONG = "a long answer with many words. " * 40


async def two_turns(h: Harness, system_prompt: str | None = "Be brief.") -> object:
    await h.ctx.plugin(Compaction, {})
    h.model.push(text_response(LONG), text_response(LONG))
    agent = h.agent(system_prompt=system_prompt)
    for prompt in ("first", "second"):
        agent.send([text(prompt)])
        await agent.when_idle()
    return agent


async def test_compact_summarizes_an_idle_agent_between_turns_with_the_conversation_prefix() -> None:
    async with Harness() as h:
        agent = await two_turns(h)
        h.model.push(text_response("We talked twice."))
        result = await h.ctx[COMPACTION].compact(agent, "keep the word 'twice'")  # type: ignore[arg-type]
        last_turn = h.model.requests[1]
        summary = h.model.requests[2]
        assert result.compacted
        assert result.tokens_after < result.tokens_before
        assert result.message.startswith("compacted the history (summarized)")
        assert summary.system == last_turn.system == "Be brief."
        assert summary.messages[:3] == last_turn.messages[:3]
        assert text_of(summary.messages[-1].content) == f"{SUMMARY_INSTRUCTION}\n\nAlso: keep the word 'twice'"
        assert summary.max_tokens == 8192
        event = result.event
        assert type(event) is CompactionEvent
        assert event.seq == agent.session.seq - 1
        assert event.data.trigger == "manual"
        assert event.data.turn is event.data.step
        messages = agent.session.derive_messages()
        assert text_of(messages[0].content) == SUMMARY_HEADER + "We talked twice."
        assert [m.role for m in messages] == ["user", "assistant"]  # the summary, then the newest unit: the last answer
        assert messages == derive_messages(list(agent.session.events))
        h.model.push(text_response("third answer"))
        agent.send([text("third")])
        await agent.when_idle()
        assert h.model.requests[3].messages == [*messages, h.model.requests[3].messages[-1]]


async def test_the_command_handler_says_what_happened() -> None:
    async with Harness() as h:
        agent = await two_turns(h, system_prompt=None)
        service = h.ctx[COMPACTION]
        h.model.push(text_response("We talked twice."))
        assert (await service.compact_command(agent, "  ")).startswith("compacted the history")  # type: ignore[arg-type, union-attr]
        assert text_of(h.model.requests[-1].messages[-1].content) == SUMMARY_INSTRUCTION
        assert await service.compact_command(agent, "") == "nothing to compact: the history is a single exchange"  # type: ignore[arg-type]


async def test_a_service_that_saw_no_request_compacts_with_the_prompt_the_loop_sends() -> None:
    async with Harness() as h:
        h.system_prompt.section(PromptSection(name="rules", order=1, text="Follow the rules."))
        register_probe(h)
        h.model.push(text_response(LONG), text_response(LONG), text_response("Two answers."))
        agent = h.agent(system_prompt="Be brief.")
        for prompt in ("a", "b"):
            agent.send([text(prompt)])
            await agent.when_idle()
        await h.ctx.plugin(Compaction, {})
        result = await h.ctx[COMPACTION].compact(agent)  # type: ignore[arg-type]
        sent, summary = h.model.requests[1], h.model.requests[2]
        assert result.compacted
        assert summary.system == sent.system
        assert "Follow the rules." in (summary.system or "")
        assert summary.tools == sent.tools
        assert summary.tools


async def test_compact_refuses_a_running_agent_and_an_agent_without_a_model() -> None:
    async with Harness() as h:
        await h.ctx.plugin(Compaction, {})
        service = h.ctx[COMPACTION]
        h.model.push(HANG)
        agent = h.agent()
        agent.send([text("wait")])
        while agent.status != "running":
            await asyncio.sleep(0)
        with pytest.raises(HarnessError, match="is busy") as busy:
            await service.compact(agent)  # type: ignore[arg-type]
        assert busy.value.code == "BUSY"
        assert (await service.compact_command(agent, "")).startswith('compaction failed: agent "main" is busy')  # type: ignore[arg-type, union-attr]
        agent.cancel()
        await agent.when_idle()
        modelless = h.loop.create("other", AgentOptions())
        with pytest.raises(HarnessError, match="has no model") as missing:
            await service.compact(modelless)  # type: ignore[arg-type]
        assert missing.value.code == "NO_MODEL"


async def test_a_failed_manual_summary_is_logged_and_does_not_count_toward_the_stop() -> None:
    async with Harness() as h:
        agent = await two_turns(h)
        service = h.ctx[COMPACTION]
        for _ in range(4):
            h.model.push(text_response("x " * 5000))
            result = await service.compact(agent)  # type: ignore[arg-type]
            assert not result.compacted
            assert "did not shrink" in result.message
        errors = [e.data.error for e in agent.session.events if type(e) is CompactionEvent]
        assert len(errors) == 4


def test_the_config_rejects_a_tail_at_or_over_the_threshold_and_oversized_heads() -> None:
    for bad, field in (({"retain": 0.8}, "retain"), ({"pruneChars": 100, "keepChars": 50}, "keepChars")):
        with pytest.raises(ValueError, match=field):
            Compaction.Config.model_validate(bad)
    config = Compaction.Config.model_validate({"models": {"mine-*": {"contextWindow": 5000}}, "contextWindow": 7000})
    assert [config.window(m) for m in ("mine-1", "deepseek-v4-pro", "deepseek-chat", "other")] == [
        5000,
        256_000,
        256_000,
        7000,
    ]


async def test_the_plugin_without_auto_registers_no_listener() -> None:
    async with Harness() as h:
        await h.ctx.plugin(Compaction, {"auto": False})
        model = GrowingModel(3)
        register_probe(h)
        model.load(h, 4)
        agent = h.agent()
        agent.send([text("go")])
        await agent.when_idle()
        assert not [e for e in agent.session.events if type(e) is CompactionEvent]
        with pytest.raises(ConfigError):
            await h.ctx.plugin(Compaction, {"threshold": 2})
