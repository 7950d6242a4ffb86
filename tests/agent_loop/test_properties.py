"""SPEC §8.15 scheduling properties, and the issue's state-machine property: random interleavings
of send / steer / inject / abort / cancel / dispose against a scripted model with randomly throwing
listeners always leave a balanced, loadable log and a live loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsh.core.agent import (
    AGENT_STEP_END,
    AGENT_STEP_START,
    AGENT_STREAM_CHUNK,
    AGENT_TURN_CONTINUATION,
    AGENT_TURN_END,
    AGENT_TURN_START,
)
from dsh.core.errors import LlmError
from dsh.core.llm import BlockStartChunk, GenerateOptions, StreamChunk, TextDeltaChunk, ToolCallBlock, text_of
from dsh.core.session import (
    AssistantMessageEvent,
    StepEndEvent,
    StepStartEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
    UserMessageEvent,
)
from dsh.core.tools import ToolDefinition
from dsh.testing.harness import Harness
from dsh.testing.scripted import error_finish, text_response, tool_call_response
from tests.agent_loop.helpers import Recorder, of_type, text, tool_calls_response, until

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_log(events: list[Any]) -> None:
    """The invariants every log must satisfy, whatever threw where.

    Within a step, the ``tool/call`` events follow the model's order of the calls (a
    prefix of it: an abort stops new calls), and the ``tool/result`` events come in the
    same order as the calls, one each, even when a batch ran in parallel.
    """
    open_turn: int | None = None
    open_step: int | None = None
    pending: set[str] = set()
    turn_starts: list[int] = []
    turn_ends: list[int] = []
    asked: list[str] = []
    called: list[str] = []
    answered: list[str] = []
    for event in events:
        match event:
            case TurnStartEvent(data=data):
                assert open_turn is None, f"turn/start {data.turn} while {open_turn} open"
                open_turn = data.turn
                turn_starts.append(data.turn)
            case TurnEndEvent(data=data):
                assert open_turn == data.turn, "turn/end without its turn/start"
                assert open_step is None, "a step outlived its turn"
                assert not pending, f"tool calls without results: {pending}"
                turn_ends.append(data.turn)
                open_turn = None
            case _:
                assert open_turn is not None, f"{event.type} outside any turn"
                match event:
                    case StepStartEvent(data=data):
                        assert open_step is None
                        open_step = data.step
                        asked, called, answered = [], [], []
                    case StepEndEvent():
                        assert not pending, f"tool calls without results: {pending}"
                        assert called == asked[: len(called)], f"calls {called} out of the model's order {asked}"
                        assert answered == called, f"results {answered} out of the calls' order {called}"
                        open_step = None
                    case AssistantMessageEvent(data=message):
                        asked = [block.id for block in message.content if type(block) is ToolCallBlock]
                    case ToolCallEvent(data=call):
                        assert open_step is not None
                        assert call.call_id not in called, f"{call.call_id} called twice"
                        pending.add(call.call_id)
                        called.append(call.call_id)
                    case ToolResultEvent(data=result):
                        assert result.call_id in pending, f"{result.call_id}: a result without a pending call"
                        pending.discard(result.call_id)
                        answered.append(result.call_id)
    assert open_turn is None, "a turn was left open"
    assert turn_starts == turn_ends
    assert turn_starts == sorted(set(turn_starts))


# ------------------------------------------------------------ §8.15 scheduling
@SETTINGS
@given(st.lists(st.text(min_size=1, max_size=5), min_size=1, max_size=8))
def test_a_synchronous_burst_loses_no_message_and_uses_strictly_increasing_turns(texts: list[str]) -> None:
    """a synchronous burst loses no message and uses strictly increasing turns"""

    async def scenario() -> None:
        async with Harness([text_response("ok")]) as h:
            agent = h.agent()
            rec = Recorder(h.ctx, agent)
            for value in texts:
                agent.send(text(value))
            await until(lambda: bool(of_type(agent.session, "turn/end")))
            await agent.when_idle()
            logged = [text_of(e.data.content) for e in agent.session.events if type(e) is UserMessageEvent]
            assert logged == texts
            assert len(of_type(agent.session, "turn/start")) == 1
            assert rec.statuses == ["running", "idle"]

    asyncio.run(scenario())


@SETTINGS
@given(st.integers(min_value=1, max_value=5))
def test_sequential_sends_each_get_their_own_turn_with_increasing_numbers(count: int) -> None:
    """sequential sends each get their own turn with increasing numbers"""

    async def scenario() -> None:
        async with Harness([text_response(f"r{i}") for i in range(count)]) as h:
            agent = h.agent()
            for i in range(count):
                agent.send(text(f"m{i}"))
                await until(lambda i=i: len(of_type(agent.session, "turn/end")) == i + 1)
                await agent.when_idle()
            assert [d["turn"] for d in of_type(agent.session, "turn/start")] == list(range(1, count + 1))
            check_log(list(agent.session.events))

    asyncio.run(scenario())


@SETTINGS
@given(st.lists(st.tuples(st.text(min_size=1, max_size=4), st.booleans()), min_size=1, max_size=8))
def test_mixed_schedule_send_optionally_settle_loses_no_message_and_orders_turns(
    plan: list[tuple[str, bool]],
) -> None:
    """mixed schedule (send, optionally settle) loses no message and orders turns"""

    async def scenario() -> None:
        async with Harness([text_response("ok") for _ in plan]) as h:
            agent = h.agent()
            for value, settle in plan:
                agent.send(text(value))
                if settle:
                    await until(lambda: not agent.inbox.has_queued())
                    await agent.when_idle()
            await until(lambda: not agent.inbox.has_queued() and agent.status == "idle")
            await agent.when_idle()
            logged = [text_of(e.data.content) for e in agent.session.events if type(e) is UserMessageEvent]
            assert logged == [value for value, _ in plan]
            check_log(list(agent.session.events))

    asyncio.run(scenario())


# ------------------------------------------------------- random interleavings
class PlannedModel:
    """An adapter whose n-th call follows ``plan[n % len(plan)]``; in ``final`` mode it answers text."""

    def __init__(self, plan: list[str]) -> None:
        self.plan = plan or ["text"]
        self.calls = 0
        self.final = False

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        kind = "text" if self.final else self.plan[self.calls % len(self.plan)]
        self.calls += 1
        return self._play(kind, options)

    async def _play(self, kind: str, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        if kind == "hang":
            yield BlockStartChunk(index=0, block_type="text")
            yield TextDeltaChunk(index=0, text="partial")
            assert options.signal is not None
            await options.signal.wait()
            raise LlmError("aborted", "ABORTED")
        if kind == "raise":
            raise LlmError("provider down", "SERVER")
        call = self.calls
        chunks = {
            "text": lambda: text_response("fine"),
            "tool": lambda: tool_call_response(f"c{call}", "work", {"n": call}),
            "batch": lambda: tool_calls_response(
                (f"c{call}-1", "look", {"n": 1}),
                (f"c{call}-2", "look", {"n": 2}),
                (f"c{call}-3", "work", {"n": 3}),
                (f"c{call}-4", "look", {"n": 4}),
                (f"c{call}-5", "look", {"n": 5}),
                (f"c{call}-6", "look", {"n": 6}),
            ),
            "error": lambda: error_finish("bad stream", "X"),
        }[kind]()
        for chunk in chunks:
            await asyncio.sleep(0)
            yield chunk


EVENTS = {
    "turn-start": AGENT_TURN_START,
    "turn-end": AGENT_TURN_END,
    "step-start": AGENT_STEP_START,
    "step-end": AGENT_STEP_END,
    "chunk": AGENT_STREAM_CHUNK,
}

operations = st.lists(
    st.one_of(
        st.tuples(st.just("send"), st.integers(0, 9)),
        st.tuples(st.just("steer"), st.integers(0, 9)),
        st.tuples(st.just("inject"), st.integers(0, 9)),
        st.tuples(st.just("abort"), st.integers(0, 9)),
        st.tuples(st.just("cancel"), st.integers(0, 9)),
        st.tuples(st.just("tick"), st.integers(0, 12)),
    ),
    max_size=14,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=operations,
    plan=st.lists(st.sampled_from(["text", "tool", "batch", "hang", "raise", "error"]), min_size=1, max_size=5),
    throwing=st.sets(st.sampled_from([*EVENTS, "continuation", "tool"]), max_size=3),
    dispose_at_end=st.booleans(),
    pool=st.integers(1, 3),
    delays=st.lists(st.integers(0, 3), min_size=1, max_size=6),
)
def test_random_interleavings_keep_every_turn_balanced_and_the_loop_alive(
    ops: list[tuple[str, int]], plan: list[str], throwing: set[str], dispose_at_end: bool, pool: int, delays: list[int]
) -> None:
    """Parallel batches included ("batch": safe ``look`` calls around an unsafe ``work`` call, the pool of
    ``pool`` slots, each look taking a random number of ticks), every tool/call keeps one tool/result."""

    async def scenario() -> None:
        async with Harness([], loop_config={"agents": [], "maxParallelToolCalls": pool}) as h:
            model = PlannedModel(plan)
            h.llm.register_adapter(["planned"], model)  # type: ignore[arg-type]
            armed = [True]

            async def work(args: Any, _exec: Any) -> list[Any]:
                await asyncio.sleep(0)
                if "tool" in throwing and armed[0]:
                    raise RuntimeError("tool boom")
                return text(f"worked {args}")

            h.tools.register(ToolDefinition(name="work", description="w", parameters={"type": "object"}, execute=work))
            looks = [0]

            async def look(args: Any, _exec: Any) -> list[Any]:
                looks[0] += 1
                for _ in range(delays[looks[0] % len(delays)]):
                    await asyncio.sleep(0)
                if "tool" in throwing and armed[0] and args["n"] == 2:
                    raise RuntimeError("look boom")
                return text(f"looked {args}")

            h.tools.register(
                ToolDefinition(
                    name="look", description="l", parameters={"type": "object"}, execute=look, concurrency_safe=True
                )
            )
            effects = []
            for name in throwing:
                if name in EVENTS:

                    def boom(*_args: Any, name: str = name) -> None:
                        if armed[0]:
                            raise RuntimeError(f"{name} boom")

                    effects.append(h.ctx.on(EVENTS[name], boom))
                elif name == "continuation":

                    def cont(*args: Any) -> Any:
                        if armed[0]:
                            raise RuntimeError("continuation boom")
                        return args[-1]()

                    effects.append(h.ctx.on(AGENT_TURN_CONTINUATION, cont))
            agent = h.agent(model="planned")
            for op, n in ops:
                if op == "send":
                    agent.send(text(f"send {n}"))
                elif op == "steer":
                    agent.steer(text(f"steer {n}"))
                elif op == "inject":
                    try:
                        agent.inject(text(f"inject {n}"))
                    except RuntimeError:
                        pass  # a throwing listener on the injection's own events reaches the caller
                elif op == "abort":
                    agent.abort(f"abort {n}")
                elif op == "cancel":
                    agent.cancel(f"cancel {n}")
                else:
                    for _ in range(n):
                        await asyncio.sleep(0)
            if dispose_at_end:
                await agent.stop()
                check_log(list(agent.session.events))
                return
            armed[0] = False
            for effect in effects:
                effect()
            model.final = True
            agent.cancel("settle")
            await agent.when_idle()
            ends = len(of_type(agent.session, "turn/end"))
            agent.send(text("are you alive?"))
            await until(lambda: len(of_type(agent.session, "turn/end")) > ends and agent.status == "idle", 20000)
            assert of_type(agent.session, "turn/end")[-1]["reason"] == {"kind": "completed"}
            check_log(list(agent.session.events))

    asyncio.run(scenario())
