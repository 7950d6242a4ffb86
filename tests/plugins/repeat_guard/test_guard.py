"""The repeat guard through the real loop: identical calls in a row earn a durable advisory note."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

import dsh.plugins.repeat_guard as repeat_guard
from dsh.agent_loop import AGENT_LOOP
from dsh.core.agent import AGENT_QUEUED, AgentOptions
from dsh.core.llm import GenerateOptions, PluginSource, StreamChunk, TextBlock, text_of
from dsh.core.session import Session, SteeringMessageEvent
from dsh.core.tools import ToolDefinition, ToolExecution
from dsh.kernel import ConfigError, Context, PluginSpec
from dsh.plugins.repeat_guard import PREVIEW_CHARS, SOURCE, RepeatGuard, canonical_arguments, repeat_note
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response, tool_call_response
from tests.agent_loop.helpers import request_texts, text, tool_calls_response


class CallingModel:
    """Answers with ``plans[n]`` (tool-call argument dicts) for its n-th request, then text."""

    def __init__(self, plans: list[list[dict[str, Any]]]) -> None:
        self.plans = plans
        self.requests: list[GenerateOptions] = []

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        index = len(self.requests)
        self.requests.append(options)
        if index >= len(self.plans):
            return self._play(text_response("done"))
        calls = [(f"c{index}-{i}", "probe", args) for i, args in enumerate(self.plans[index])]
        return self._play(tool_calls_response(*calls))

    async def _play(self, chunks: list[StreamChunk]) -> AsyncIterator[StreamChunk]:
        for chunk in chunks:
            yield chunk


async def stack(h: Harness, plans: list[list[dict[str, Any]]], threshold: int | None = None) -> CallingModel:
    model = CallingModel(plans)
    h.llm.register_adapter(["calling"], model)  # type: ignore[arg-type]

    async def probe(_args: Any, _execution: ToolExecution) -> Any:
        return text("same answer")

    h.tools.register(
        ToolDefinition(
            name="probe", description="p", parameters={"type": "object"}, execute=probe, concurrency_safe=True
        )
    )
    await h.ctx.plugin(repeat_guard, {} if threshold is None else {"threshold": threshold})
    return model


def notes(session: Session) -> list[str]:
    return [
        text_of(event.data.content)
        for event in session.events
        if type(event) is SteeringMessageEvent and event.data.source == SOURCE
    ]


async def test_the_third_identical_call_earns_a_note_the_model_sees_next() -> None:
    async with Harness() as h:
        model = await stack(h, [[{"path": "a"}]] * 7)
        agent = h.loop.create("main", AgentOptions(model="calling"))
        agent.send(text("read it"))
        await agent.when_idle()
        assert notes(agent.session) == [
            repeat_note("probe", '{"path":"a"}', 3),
            repeat_note("probe", '{"path":"a"}', 6),
        ]
        assert "call number 3 in a row of probe" not in request_texts(model.requests[2])
        assert "call number 3 in a row of probe" in request_texts(model.requests[3])
        steering = [event for event in agent.session.events if type(event) is SteeringMessageEvent]
        assert steering[0].data.turn == 1
        assert steering[0].data.source == PluginSource(plugin="repeat-guard")
        seeded = h.sessions.create("copy", seed=agent.session.events)
        assert seeded.derive_messages() == agent.session.derive_messages()


async def test_different_arguments_and_a_new_turn_start_a_new_chain() -> None:
    plans = [[{"path": "a"}], [{"path": "a"}], [{"path": "b"}], [{"path": "a"}], [{"path": "a"}]]
    async with Harness() as h:
        model = await stack(h, plans)
        agent = h.loop.create("main", AgentOptions(model="calling"))
        agent.send(text("go"))
        await agent.when_idle()
        assert notes(agent.session) == []
        model.plans = [[{"path": "a"}]] * 2
        model.requests.clear()
        agent.send(text("again"))
        await agent.when_idle()
        assert notes(agent.session) == []  # the chain of the first turn did not carry over


async def test_calls_in_one_parallel_batch_count_in_the_models_order() -> None:
    async with Harness() as h:
        await stack(h, [[{"k": 1, "j": 2}, {"j": 2, "k": 1}, {"k": 1, "j": 2}]], threshold=3)
        agent = h.loop.create("main", AgentOptions(model="calling"))
        agent.send(text("go"))
        await agent.when_idle()
        assert notes(agent.session) == [repeat_note("probe", '{"j":2,"k":1}', 3)]


async def test_a_note_that_cannot_be_queued_is_logged_and_the_call_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    async with Harness() as h:
        await stack(h, [[{"x": 1}]] * 2, threshold=2)

        def refuse(_agent: Any, _content: Any, info: Any) -> None:
            if info.source == SOURCE:
                raise RuntimeError("queue full")

        h.ctx.on(AGENT_QUEUED, refuse)
        agent = h.loop.create("main", AgentOptions(model="calling"))
        with caplog.at_level(logging.WARNING):
            agent.send(text("go"))
            await agent.when_idle()
        assert "could not add the note on repeated probe calls: queue full" in caplog.text
        results = [event.data for event in agent.session.events if event.type == "tool/result"]
        assert [result.is_error for result in results] == [False, False]


async def test_calls_without_an_agent_are_not_counted_and_disposal_forgets_the_chain() -> None:
    async with Harness([tool_call_response("c1", "probe", {}), text_response("ok")]) as h:
        await stack(h, [])
        guard = RepeatGuard(h.ctx, 2)
        for _ in range(3):
            await h.tools.execute(ToolExecution(call_id="x", name="probe", arguments={}))
        assert guard.chains == {}
        made: list[Any] = []

        def owner(ctx: Context, _config: object) -> None:
            made.append(ctx[AGENT_LOOP].create("main", AgentOptions(model="mock")))

        fiber = await h.ctx.plugin(PluginSpec(name="owner", apply=owner, inject=["agent_loop"]))
        (agent,) = made
        agent.send(text("go"))
        await agent.when_idle()
        assert list(guard.chains) == [agent]
        await fiber.dispose()
        assert guard.chains == {}


async def test_unloading_the_plugin_stops_the_notes() -> None:
    async with Harness() as h:
        model = CallingModel([[{"p": 1}]] * 4)
        h.llm.register_adapter(["calling"], model)  # type: ignore[arg-type]

        async def probe(_args: Any, _execution: ToolExecution) -> Any:
            return text("same")

        h.tools.register(ToolDefinition(name="probe", description="p", parameters={"type": "object"}, execute=probe))
        fiber = await h.ctx.plugin(repeat_guard, {"threshold": 2})
        await fiber.dispose()
        agent = h.loop.create("main", AgentOptions(model="calling"))
        agent.send(text("go"))
        await agent.when_idle()
        assert notes(agent.session) == []


async def test_a_threshold_below_two_is_a_config_error() -> None:
    async with Harness() as h:
        with pytest.raises(ConfigError):
            await h.ctx.plugin(repeat_guard, {"threshold": 1})


def test_the_note_quotes_long_arguments_only_in_part() -> None:
    long = canonical_arguments({"text": "x" * 500})
    note = repeat_note("write", long, 4)
    assert long[:PREVIEW_CHARS] + "…" in note
    assert long not in note
    assert canonical_arguments({"b": 1, "a": [TextBlock(text="t")]}).startswith('{"a":["TextBlock(')
