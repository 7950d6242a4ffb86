"""Summaries that do not help are rejected, and after ``maxFailures`` in a row compaction stops: no loop."""

from __future__ import annotations

import logging

import pytest

from dsh.core.errors import LlmError
from dsh.core.llm import GenerateOptions, StreamChunk, text
from dsh.core.session import CompactionEvent
from dsh.plugins.compaction import AGENT_COMPACTION, COMPACTION, Compaction, CompactionNotice
from dsh.testing.harness import Harness
from dsh.testing.logs import data_json
from dsh.testing.scripted import error_finish
from tests.plugins.compaction.helpers import GrowingModel, register_probe, text_chunks

WINDOW = 8_000


def bloated(options: GenerateOptions) -> str:
    """A "summary" longer than what it stands for."""
    return "The conversation so far, repeated at length. " * 2000


async def run(model: GrowingModel, h: Harness, config: dict[str, object] | None = None) -> list[CompactionNotice]:
    notices: list[CompactionNotice] = []
    await h.ctx.plugin(Compaction, {"contextWindow": WINDOW, **(config or {})})
    h.ctx.on(AGENT_COMPACTION, lambda _agent, notice: notices.append(notice))
    register_probe(h)
    model.load(h, model.steps + 20)
    agent = h.agent()
    agent.send([text("probe")])
    await agent.when_idle()
    return notices


async def test_a_model_whose_summaries_do_not_shrink_stops_compaction_after_three_attempts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = GrowingModel(40, summary=bloated)
    async with Harness(loop_config={"agents": [], "maxSteps": 60}) as h:
        with caplog.at_level(logging.WARNING):
            notices = await run(model, h)
        compactions = [e.data for e in h.agents.get("main").session.events if type(e) is CompactionEvent]  # type: ignore[union-attr]
    assert len(model.summaries) == 3  # three attempts, then no more summary requests
    assert [n.kind for n in notices] == ["failed", "failed", "failed", "stopped"]
    assert all("did not shrink" in str(data.error) for data in compactions)
    assert len(compactions) == 3
    assert model.calls == 40  # the turn went on without compaction
    assert "automatic compaction stopped after 3 attempts" in caplog.text


async def test_failed_summary_requests_count_as_failures_and_never_fail_the_step() -> None:
    def failures(options: GenerateOptions) -> list[StreamChunk]:
        attempt = len(model.summaries)
        if attempt == 1:
            raise LlmError("summary refused", "SERVER")
        if attempt == 2:
            return error_finish("overloaded", "SERVER")
        return text_chunks(options, "   ")

    model = GrowingModel(30, summary=failures)
    async with Harness(loop_config={"agents": [], "maxSteps": 40}) as h:
        notices = await run(model, h)
        session = h.agents.get("main").session  # type: ignore[union-attr]
        errors = [e.data.error for e in session.events if type(e) is CompactionEvent]
        ends = data_json(session, "turn/end")
    assert errors == [
        "the summary request failed: summary refused",
        "the summary request failed: overloaded",
        "the summary request answered no text",
    ]
    assert [n.kind for n in notices] == ["failed", "failed", "failed", "stopped"]
    assert ends == [{"turn": 1, "reason": {"kind": "completed"}}]


async def test_a_compaction_that_leaves_the_request_over_the_threshold_counts_as_a_failure() -> None:
    # a system prompt of 85% of the window: every compaction shrinks the history, none enough
    model = GrowingModel(60)
    async with Harness(loop_config={"agents": [], "maxSteps": 70}) as h:
        await h.ctx.plugin(Compaction, {"contextWindow": WINDOW, "maxFailures": 3})
        notices: list[CompactionNotice] = []
        h.ctx.on(AGENT_COMPACTION, lambda _agent, notice: notices.append(notice))
        register_probe(h)
        model.load(h, 80)
        agent = h.agent(system_prompt="Rules. " * int(WINDOW * 0.85 * 4 / 7))
        agent.send([text("probe")])
        await agent.when_idle()
        kinds = [n.kind for n in notices]
        assert kinds[-1] == "stopped"
        assert kinds.count("stopped") == 1
        assert "compacted" in kinds  # it shrank the history, not enough: that counts as a failure too
        assert len(kinds) == 4
        # a manual compaction that works turns automatic compaction back on
        model.steps += 3
        result = await h.ctx[COMPACTION].compact(agent)  # type: ignore[arg-type]
        assert result.compacted
        agent.send([text("three more")])
        await agent.when_idle()
        assert len(notices) > 5
        assert notices[5].trigger == "pressure"
