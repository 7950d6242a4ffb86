"""The per-turn step limit (issue 17): a model that keeps calling tools stops at ``max_steps``, the turn
ends ``max-steps``, and the loop carries on."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from dsh.agent_loop import AgentLoop, LoopSettings
from dsh.core.agent import AGENT_TURN_CONTINUATION, AgentOptions
from dsh.core.errors import HarnessError
from dsh.core.llm import GenerateOptions, StreamChunk, decode, encode
from dsh.core.session import MaxStepsReason, TurnEndReason
from dsh.core.tools import ToolDefinition, ToolExecution
from dsh.kernel import ConfigError
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response, tool_call_response
from tests.agent_loop.helpers import of_type, text, turn_end_reasons


class LoopingModel:
    """Calls the ``again`` tool forever (until ``stop`` is set, then answers text)."""

    def __init__(self) -> None:
        self.calls = 0
        self.stop = False

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        self.calls += 1
        chunks = text_response("done") if self.stop else tool_call_response(f"c{self.calls}", "again", {})
        return self._play(chunks)

    async def _play(self, chunks: list[StreamChunk]) -> AsyncIterator[StreamChunk]:
        for chunk in chunks:
            yield chunk


async def looping(h: Harness) -> LoopingModel:
    model = LoopingModel()
    h.llm.register_adapter(["looping"], model)  # type: ignore[arg-type]

    async def again(_args: Any, _execution: ToolExecution) -> Any:
        return text("again")

    h.tools.register(ToolDefinition(name="again", description="a", parameters={"type": "object"}, execute=again))
    return model


async def test_a_looping_model_stops_at_max_steps_and_the_next_turn_runs() -> None:
    async with Harness() as h:
        model = await looping(h)
        agent = h.loop.create("main", AgentOptions(model="looping", max_steps=3))
        agent.send(text("loop"))
        await agent.when_idle()
        assert model.calls == 3
        assert len(of_type(agent.session, "step/start")) == 3
        assert len(of_type(agent.session, "tool/result")) == 3
        assert turn_end_reasons(agent.session) == [{"kind": "max-steps"}]
        model.stop = True
        agent.send(text("now stop"))
        await agent.when_idle()
        assert turn_end_reasons(agent.session) == [{"kind": "max-steps"}, {"kind": "completed"}]


async def test_the_loop_config_sets_the_limit_and_an_agent_option_wins() -> None:
    async with Harness(loop_config={"agents": [], "maxSteps": 2}) as h:
        model = await looping(h)
        assert h.loop.settings == LoopSettings(max_steps=2)
        first = h.loop.create("first", AgentOptions(model="looping"))
        first.send(text("loop"))
        await first.when_idle()
        assert model.calls == 2
        second = h.loop.create("second", AgentOptions(model="looping", max_steps=4))
        second.send(text("loop"))
        await second.when_idle()
        assert model.calls == 6
        assert turn_end_reasons(first.session) == turn_end_reasons(second.session) == [{"kind": "max-steps"}]


async def test_a_turn_that_stops_on_its_own_at_the_limit_is_completed() -> None:
    script = [tool_call_response("c1", "again", {}), text_response("finished")]
    async with Harness(script) as h:
        await looping(h)
        agent = h.loop.create("main", AgentOptions(model="mock", max_steps=2))
        agent.send(text("go"))
        await agent.when_idle()
        assert turn_end_reasons(agent.session) == [{"kind": "completed"}]


async def test_the_limit_caps_a_continuation_listener_that_never_stops() -> None:
    async with Harness([text_response(f"r{i}") for i in range(3)]) as h:
        h.ctx.on(AGENT_TURN_CONTINUATION, lambda *_args: _true())
        agent = h.loop.create("main", AgentOptions(model="mock", max_steps=3))
        agent.send(text("go"))
        await agent.when_idle()
        assert len(h.model.requests) == 3
        assert turn_end_reasons(agent.session) == [{"kind": "max-steps"}]


async def _true() -> bool:
    return True


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
async def test_a_step_limit_below_one_is_refused_at_creation(bad: Any) -> None:
    async with Harness() as h:
        with pytest.raises(HarnessError) as refused:
            h.loop.create("main", AgentOptions(model="mock", max_steps=bad))
        assert refused.value.code == "INVALID_OPTIONS"
        assert "max_steps must be a whole number of at least 1" in str(refused.value)
        assert h.agents.get("main") is None


async def test_configured_agents_take_their_own_limit() -> None:
    async with Harness(with_loop=False) as h:
        await h.ctx.plugin(
            AgentLoop, {"agents": [{"id": "cfg", "model": "looping", "maxSteps": 2}], "maxParallelToolCalls": 3}
        )
        model = await looping(h)
        agent = h.agents.get("cfg")
        assert agent is not None
        agent.send(text("loop"))
        await agent.when_idle()
        assert model.calls == 2
        assert h.loop.settings == LoopSettings(max_parallel_tool_calls=3)


@pytest.mark.parametrize(
    "config", [{"maxSteps": 0}, {"maxParallelToolCalls": 0}, {"agents": [{"id": "a", "maxSteps": 0}]}]
)
async def test_limits_below_one_are_config_errors(config: dict[str, Any]) -> None:
    async with Harness(with_loop=False) as h:
        with pytest.raises(ConfigError):
            await h.ctx.plugin(AgentLoop, config)


def test_the_reason_is_max_steps_on_the_wire() -> None:
    assert encode(MaxStepsReason()) == b'{"kind":"max-steps"}'
    assert type(decode(b'{"kind":"max-steps"}', TurnEndReason)) is MaxStepsReason
