"""Driver edges beyond the spec titles: abort at every check point, streams without aclose,
missing services, spurious wake-ups, and the race helper itself."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator
from typing import Any

import pytest

from dsh.agent_loop import ReactLoopAgent, StepAbortedError, TurnRun, race_abort
from dsh.core.agent import AGENT_STEP_RESULT, AGENT_STREAM_CHUNK, AGENT_TURN_CONTINUATION, AgentOptions
from dsh.core.llm import GenerateOptions, StreamChunk, UsageChunk
from dsh.core.session import SESSION_EVENT, Session
from dsh.core.tools import ToolDefinition
from dsh.kernel import AbortController
from dsh.testing.harness import Harness
from dsh.testing.scripted import HANG, text_response, tool_call_response
from tests.agent_loop.helpers import of_type, text, turn_end_reasons, types, until


async def finish(agent: Any, count: int = 1) -> None:
    await until(lambda: len(of_type(agent.session, "turn/end")) >= count and agent.status != "running")
    await agent.when_idle()


def noop_tool(name: str = "noop") -> ToolDefinition:
    async def run(_args: Any, _exec: Any) -> list[Any]:
        return text("ok")

    return ToolDefinition(name=name, description=name, parameters={"type": "object"}, execute=run)


class Unchecked:
    """An adapter that neither checks the signal nor offers ``aclose`` (a bare async iterator)."""

    def __init__(self, chunks: list[StreamChunk]) -> None:
        self.chunks = chunks

    def stream(self, _options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        chunks = list(self.chunks)

        class Iterator:
            def __aiter__(self) -> Iterator:
                return self

            async def __anext__(self) -> StreamChunk:
                if not chunks:
                    raise StopAsyncIteration
                return chunks.pop(0)

        return Iterator()


async def test_an_abort_from_a_stream_chunk_listener_stops_the_stream_at_the_next_chunk() -> None:
    async with Harness([]) as h:
        h.llm.register_adapter(["bare"], Unchecked(text_response("abcdef")))  # type: ignore[arg-type]
        agent = h.agent(model="bare")
        h.ctx.on(AGENT_STREAM_CHUNK, lambda a, _t, _s, _c: a.abort("enough"))
        agent.send(text("go"))
        await finish(agent)
        assert len(of_type(agent.session, "assistant/chunk")) == 1
        assert turn_end_reasons(agent.session) == [{"kind": "aborted", "reason": "enough"}]


async def test_a_stream_without_aclose_completes_normally() -> None:
    async with Harness([]) as h:
        h.llm.register_adapter(["bare"], Unchecked(text_response("hi")))  # type: ignore[arg-type]
        agent = h.agent(model="bare")
        agent.send(text("go"))
        await finish(agent)
        assert turn_end_reasons(agent.session) == [{"kind": "completed"}]


async def test_an_abort_in_the_step_result_waterfall_skips_every_tool_call() -> None:
    async with Harness([tool_call_response("c1", "noop", {})]) as h:
        h.tools.register(noop_tool())
        agent = h.agent()

        def abort_here(a: Any, _t: int, _s: int, _m: Any, next_: Any) -> Any:
            a.abort("before tools")
            return next_()

        h.ctx.on(AGENT_STEP_RESULT, abort_here)
        agent.send(text("go"))
        await finish(agent)
        assert "tool/call" not in types(agent.session)
        assert turn_end_reasons(agent.session) == [{"kind": "aborted", "reason": "before tools"}]


async def test_an_abort_right_after_a_tool_result_ends_the_step() -> None:
    async with Harness([tool_call_response("c1", "noop", {}), text_response("never")]) as h:
        h.tools.register(noop_tool())
        agent = h.agent()

        def on_event(_s: Any, event: Any) -> None:
            if event.type == "tool/result":
                agent.abort("after result")

        h.ctx.on(SESSION_EVENT, on_event)
        agent.send(text("go"))
        await finish(agent)
        assert of_type(agent.session, "tool/result")[0]["isError"] is False
        assert turn_end_reasons(agent.session) == [{"kind": "aborted", "reason": "after result"}]
        assert len(h.model.requests) == 1


async def test_disposal_from_a_continuation_listener_ends_the_turn_disposed() -> None:
    async with Harness([tool_call_response("c1", "noop", {}), text_response("never")]) as h:
        h.tools.register(noop_tool())
        agent = h.agent()
        stopping: list[Any] = []

        def dispose(a: Any, _t: int, _d: bool, next_: Any) -> Any:
            stopping.append(a.stop())
            return next_()

        h.ctx.on(AGENT_TURN_CONTINUATION, dispose)
        agent.send(text("go"))
        await until(lambda: bool(stopping))
        await stopping[0]
        assert turn_end_reasons(agent.session) == [{"kind": "disposed"}]


async def test_a_max_tokens_step_without_usage_logs_no_usage_event() -> None:
    chunks = text_response("cut", finish="max-tokens")
    chunks = [c for c in chunks if type(c) is not UsageChunk]
    async with Harness([chunks]) as h:
        agent = h.agent()
        agent.send(text("go"))
        await finish(agent)
        assert "usage" not in types(agent.session)
        assert turn_end_reasons(agent.session) == [{"kind": "max-tokens"}]


async def test_a_step_fails_clearly_when_the_llm_service_is_gone() -> None:
    async with Harness([]) as h:
        agent = h.agent()
        llm_provider = h.ctx.runtime.services["llm"].fiber
        await llm_provider.dispose()
        agent.send(text("go"))
        await finish(agent)
        message = of_type(agent.session, "error")[0]["message"]
        assert '"llm" service is not loaded' in message


async def test_a_message_queued_then_cancelled_mid_turn_never_runs() -> None:
    async with Harness([HANG]) as h:
        agent = h.agent()
        agent.send(text("one"))
        await until(lambda: "assistant/chunk" in types(agent.session))
        agent.send(text("two"))
        agent.cancel()
        await finish(agent)
        for _ in range(10):
            await asyncio.sleep(0)
        assert len(of_type(agent.session, "turn/start")) == 1
        assert agent.status == "idle"


async def test_turn_run_refuses_to_start_without_queued_work() -> None:
    async with Harness([]) as h:
        agent = h.agent()
        with pytest.raises(Exception, match="no queued message at turn start"):
            await TurnRun(agent.state, 1).run()


async def test_race_abort_lets_the_callers_own_cancellation_through() -> None:
    controller = AbortController()
    started = asyncio.Event()

    async def slow() -> None:
        started.set()
        await asyncio.Event().wait()

    outer = asyncio.ensure_future(race_abort(slow(), controller.signal))
    await started.wait()
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer


async def test_race_abort_raises_step_aborted_for_a_pre_aborted_signal() -> None:
    controller = AbortController()
    controller.abort("early")
    ran: list[bool] = []

    async def work() -> int:
        ran.append(True)
        return 1

    coro = work()
    with pytest.raises(StepAbortedError, match="early"):
        await race_abort(coro, controller.signal)
    assert ran == []
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED


async def test_race_abort_returns_the_work_value_and_raises_its_failure_unchanged() -> None:
    """(extra) a finished work's value comes back; its exception is raised as it is."""
    signal = AbortController().signal
    failure = ValueError("tool broke")

    async def value() -> int:
        await asyncio.sleep(0)
        return 7

    async def broken() -> int:
        raise failure

    assert await race_abort(value(), signal) == 7
    with pytest.raises(ValueError) as raised:
        await race_abort(broken(), signal)
    assert raised.value is failure


async def test_race_abort_interrupts_pending_work_at_once_when_the_signal_fires() -> None:
    """(extra) the abort cancels the awaited work; the reason becomes the error message."""
    controller = AbortController()
    started = asyncio.Event()
    seen: list[str] = []

    async def stalled() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def interrupt() -> None:
        await started.wait()
        controller.abort("user interrupt")

    interrupter = asyncio.ensure_future(interrupt())
    with pytest.raises(StepAbortedError, match=r"^user interrupt$"):
        await race_abort(stalled(), controller.signal)
    await interrupter
    assert seen == ["cancelled"]


async def test_race_abort_counts_work_aborted_before_it_ever_ran_as_aborted() -> None:
    """(extra) a signal firing between the work task's creation and its first step: aborted, work closed."""
    controller = AbortController()
    ran: list[bool] = []

    async def work() -> int:
        ran.append(True)
        return 1

    coro = work()
    asyncio.get_running_loop().call_soon(controller.abort, "too soon")  # runs before the work task's first step
    with pytest.raises(StepAbortedError, match=r"^too soon$"):
        await race_abort(coro, controller.signal)
    assert ran == []
    assert inspect.getcoroutinestate(coro) == inspect.CORO_CLOSED


async def test_race_abort_counts_work_that_aborts_then_returns_without_awaiting_as_aborted() -> None:
    """(extra) an abort fired by the work itself wins over the value it then returns."""
    controller = AbortController()

    async def work() -> int:
        controller.abort("from inside")
        return 1

    with pytest.raises(StepAbortedError, match=r"^from inside$"):
        await race_abort(work(), controller.signal)


async def test_race_abort_lets_the_callers_cancellation_through_even_if_the_work_swallows_it() -> None:
    """(extra) work that ignores its cancellation cannot hide the caller's own cancellation."""
    controller = AbortController()
    started = asyncio.Event()

    async def stubborn() -> int:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return 1
        return 0  # pragma: no cover - the wait above only ends by cancellation

    outer = asyncio.ensure_future(race_abort(stubborn(), controller.signal))
    await started.wait()
    outer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert outer.cancelled()


async def test_race_abort_lets_the_callers_cancellation_through_after_the_work_finished() -> None:
    """(extra) a caller cancelled between the work's end and its own resumption is still cancelled."""
    controller = AbortController()
    outer: asyncio.Future[int] | None = None

    async def work() -> int:
        assert outer is not None
        asyncio.get_running_loop().call_soon(outer.cancel)  # lands after the work is done, before the caller wakes
        return 1

    outer = asyncio.ensure_future(race_abort(work(), controller.signal))
    with pytest.raises(asyncio.CancelledError):
        await outer
    assert outer.cancelled()


async def test_when_idle_waiters_that_were_cancelled_are_skipped_on_settle() -> None:
    async with Harness([HANG]) as h:
        agent = h.agent()
        agent.send(text("go"))
        await until(lambda: "assistant/chunk" in types(agent.session))
        abandoned = asyncio.ensure_future(agent.when_idle())
        await asyncio.sleep(0)
        abandoned.cancel()
        kept = asyncio.ensure_future(agent.when_idle())
        agent.abort()
        await kept
        assert abandoned.cancelled()


async def test_an_agent_that_never_started_stops_cleanly() -> None:
    async with Harness([]) as h:
        session = h.sessions.create("lonely")
        agent = ReactLoopAgent(h.ctx, "lonely", AgentOptions(), session)
        await agent.stop()
        await agent.when_idle()
        assert agent.status == "disposed"


async def test_loop_factory_methods_fail_clearly_once_their_services_are_gone() -> None:
    async with Harness([]) as h:
        loop = h.loop
        sessions_fiber = h.ctx.runtime.services["sessions"].fiber
        await sessions_fiber.dispose()
        with pytest.raises(Exception, match="sessions service is not loaded"):
            loop.create("late")
        agents_fiber = h.ctx.runtime.services["agents"].fiber
        await agents_fiber.dispose()
        with pytest.raises(Exception, match="agents service is not loaded"):
            loop.start("late", AgentOptions(), Session("detached"))
