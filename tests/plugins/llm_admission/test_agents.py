"""llm-admission under the agent loop: a burst of turns opens two model calls at a time, and every turn ends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from dsh.core.llm import LLM_STREAM, GenerateOptions, StreamChunk, text, text_of
from dsh.core.session import AssistantMessageEvent
from dsh.plugins.llm_admission import admission_plugin
from dsh.testing.harness import Harness
from dsh.testing.logs import data_json, event_types
from tests.plugins.llm_admission.helpers import GATED, FakeTimer, GatedModel, ticks, until

AGENTS = 12


def record_asks(harness: Harness) -> list[str]:
    """The prompt of every model call made, noted by a listener outside the admission's (before any wait)."""
    asked: list[str] = []

    def outermost(options: GenerateOptions, beneath: Callable[[], AsyncIterator[StreamChunk]]) -> object:
        asked.append(text_of(options.messages[-1].content))
        return beneath()

    harness.ctx.on(LLM_STREAM, outermost, prepend=True)
    return asked


async def test_twelve_agents_turns_at_once_all_end_with_at_most_two_model_calls_opening() -> None:
    model = GatedModel()
    timer = FakeTimer()
    async with Harness() as harness:  # the real loop and services, with the invariants plugin
        harness.llm.register_adapter([GATED], model)
        await harness.ctx.plugin(admission_plugin(timer), {"maxOpening": 2})
        asked = record_asks(harness)
        agents = [harness.agent(f"agent-{index}", model=GATED) for index in range(AGENTS)]
        for index, agent in enumerate(agents):
            agent.send([text(f"task {index}")])
        await until(lambda: len(asked) == AGENTS)
        await ticks()
        assert len(model.calls) == 2  # ten turns wait for their model call to open
        assert model.opening == 2
        assert len(timer.pending) == 2
        model.answer_all()
        async with asyncio.timeout(10):
            await asyncio.gather(*(agent.when_idle() for agent in agents))
        assert model.max_opening == 2
        assert len(model.calls) == AGENTS
        for index, agent in enumerate(agents):
            assert event_types(agent.session).count("turn/start") == 1
            assert data_json(agent.session, "turn/end") == [{"turn": 1, "reason": {"kind": "completed"}}]
            answers = [
                text_of(event.data.content) for event in agent.session.events if type(event) is AssistantMessageEvent
            ]
            assert answers == [f"reply to task {index}"]
        assert timer.pending == []  # every hold timer was cancelled at its first chunk


async def test_an_agent_aborted_while_its_model_call_waits_to_open_ends_its_turn_and_holds_no_slot() -> None:
    model = GatedModel()
    timer = FakeTimer()
    async with Harness() as harness:
        harness.llm.register_adapter([GATED], model)
        await harness.ctx.plugin(admission_plugin(timer), {"maxOpening": 1})
        asked = record_asks(harness)
        first, aborted, last = (harness.agent(name, model=GATED) for name in ("first", "aborted", "last"))
        for agent in (first, aborted, last):
            agent.send([text(f"task of {agent.id}")])
        await until(lambda: len(asked) == 3 and len(model.started) == 1)
        await ticks()
        aborted.abort("not needed")
        async with asyncio.timeout(10):
            await aborted.when_idle()
        assert data_json(aborted.session, "turn/end") == [
            {"turn": 1, "reason": {"kind": "aborted", "reason": "not needed"}}
        ]
        assert [call.prompt for call in model.calls] == ["task of first"]  # it never reached the model
        model.answer_all()
        async with asyncio.timeout(10):
            await asyncio.gather(first.when_idle(), last.when_idle())
        assert [call.prompt for call in model.calls] == ["task of first", "task of last"]
        for agent in (first, last):
            assert data_json(agent.session, "turn/end") == [{"turn": 1, "reason": {"kind": "completed"}}]
        assert model.max_opening == 1
