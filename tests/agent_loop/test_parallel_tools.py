"""Parallel tool calls (issue 18): consecutive concurrency-safe calls of one step run together in a
bounded pool, an unsafe call is a barrier, the log keeps the model's order, and an abort leaves every
logged call with exactly one result."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import dsh.plugins.tool_bash as tool_bash
from dsh.agent_loop import LoopSettings, ReactLoopAgent
from dsh.core.agent import AGENT_STEP_RESULT, AgentOptions
from dsh.core.llm import Message
from dsh.core.session import SESSION_EVENT, Session, SessionEvent, ToolCallEvent, ToolResultEvent
from dsh.core.tools import TOOLS_EXECUTE, ToolDefinition, ToolExecution, ToolExecutionResult
from dsh.plugins.bash_local import LocalBashExecutor
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response
from tests.agent_loop.helpers import of_type, text, tool_calls_response, turn_end_reasons

SAFETY = 10.0
"""Seconds a tool waits for its siblings before giving up (a safety net; never asserted)."""


def tool_events(session: Session) -> list[tuple[str, str]]:
    """``(type, call id)`` of every tool/call and tool/result, in log order."""
    return [
        (event.type, event.data.call_id)
        for event in session.events
        if type(event) is ToolCallEvent or type(event) is ToolResultEvent
    ]


def register(h: Harness, name: str, body: Callable[[Any, ToolExecution], Awaitable[Any]], *, safe: bool) -> None:
    h.tools.register(
        ToolDefinition(name=name, description=name, parameters={"type": "object"}, execute=body, concurrency_safe=safe)
    )


async def test_three_safe_calls_overlap_and_the_bash_after_them_waits() -> None:
    """Three reads and a bash in one step: the reads overlap, the bash starts after all three ended."""
    script = [
        tool_calls_response(
            ("r1", "probe", {"n": 1}),
            ("r2", "probe", {"n": 2}),
            ("r3", "probe", {"n": 3}),
            ("b1", "bash", {"command": "echo bash-ran", "description": "after the reads"}),
        ),
        text_response("done"),
    ]
    async with Harness(script) as h:
        await h.ctx.plugin(LocalBashExecutor)
        await h.ctx.plugin(tool_bash)
        started: dict[int, float] = {}
        ended: dict[int, float] = {}
        all_started = asyncio.Event()

        async def probe(args: Any, _execution: ToolExecution) -> Any:
            number = args["n"]
            started[number] = time.monotonic()
            if len(started) == 3:
                all_started.set()
            await asyncio.wait_for(all_started.wait(), SAFETY)  # run one at a time, this would time out
            await asyncio.sleep(0.01 * (3 - number))  # the first call finishes last
            ended[number] = time.monotonic()
            return text(f"probe {number}")

        register(h, "probe", probe, safe=True)
        bash_started: list[float] = []

        def watch(execution: ToolExecution, next_: Callable[[], Awaitable[ToolExecutionResult]]) -> Any:
            if execution.name == "bash":
                bash_started.append(time.monotonic())
            return next_()

        h.ctx.on(TOOLS_EXECUTE, watch)
        agent = h.agent()
        agent.send(text("look around"))
        await agent.when_idle()

        assert max(started.values()) < min(ended.values())  # all three were running at once
        assert bash_started[0] >= max(ended.values())  # the barrier waited for every read
        assert ended[1] > ended[3]
        assert tool_events(agent.session) == [
            ("tool/call", "r1"),
            ("tool/call", "r2"),
            ("tool/call", "r3"),
            ("tool/result", "r1"),
            ("tool/result", "r2"),
            ("tool/result", "r3"),
            ("tool/call", "b1"),
            ("tool/result", "b1"),
        ]
        results = of_type(agent.session, "tool/result")
        assert [r["content"][0]["text"] for r in results] == ["probe 1", "probe 2", "probe 3", "bash-ran\n"]
        assert not any(r["isError"] for r in results)
        second = h.model.requests[1].messages
        assert [block.tool_call_id for m in second[-4:] for block in m.content] == ["r1", "r2", "r3", "b1"]
        assert turn_end_reasons(agent.session) == [{"kind": "completed"}]


async def test_the_pool_is_bounded_and_refilled_as_calls_settle() -> None:
    """maxParallelToolCalls 2: never more than two run; each waiting call is logged when it starts."""
    calls = [(f"c{i}", "slow", {"n": i}) for i in range(5)]
    async with Harness(
        [tool_calls_response(*calls), text_response("ok")], loop_config={"agents": [], "maxParallelToolCalls": 2}
    ) as h:
        running: list[int] = []
        peak: list[int] = []
        finished: list[int] = []

        async def slow(args: Any, _execution: ToolExecution) -> Any:
            running.append(args["n"])
            peak.append(len(running))
            await asyncio.sleep(0.01 * (5 - args["n"]))
            running.remove(args["n"])
            finished.append(args["n"])
            return text(f"slow {args['n']}")

        register(h, "slow", slow, safe=True)
        agent = h.agent()
        assert h.loop.settings == LoopSettings(max_parallel_tool_calls=2)
        agent.send(text("go"))
        await agent.when_idle()
        assert max(peak) == 2
        logged = tool_events(agent.session)
        assert [cid for kind, cid in logged if kind == "tool/call"] == [f"c{i}" for i in range(5)]
        assert [cid for kind, cid in logged if kind == "tool/result"] == [f"c{i}" for i in range(5)]
        assert logged[:3] == [("tool/call", "c0"), ("tool/call", "c1"), ("tool/call", "c2")]  # c2 took c1's slot
        assert finished[0] == 1  # c1 finished before c0, yet c0 is answered first
        assert turn_end_reasons(agent.session) == [{"kind": "completed"}]


async def test_abort_mid_batch_cancels_the_running_calls_and_starts_no_more() -> None:
    """An abort while a batch runs: started calls are cancelled and answered ABORTED; nothing new starts."""
    calls = [("a1", "hang", {}), ("a2", "hang", {}), ("a3", "hang", {}), ("w1", "write", {})]
    async with Harness([tool_calls_response(*calls)], loop_config={"agents": [], "maxParallelToolCalls": 2}) as h:
        cancelled: list[str] = []
        wrote: list[str] = []
        both = asyncio.Event()
        begun: list[str] = []

        async def hang(_args: Any, execution: ToolExecution) -> Any:
            begun.append(execution.call_id)
            if len(begun) == 2:
                both.set()
            try:
                await asyncio.sleep(SAFETY)
            except asyncio.CancelledError:
                cancelled.append(execution.call_id)
                raise
            return text("never")

        async def write(_args: Any, _execution: ToolExecution) -> Any:
            wrote.append("w1")
            return text("wrote")

        register(h, "hang", hang, safe=True)
        register(h, "write", write, safe=False)
        agent = h.agent()
        agent.send(text("go"))
        await asyncio.wait_for(both.wait(), SAFETY)
        agent.abort("stop now")
        await agent.when_idle()

        assert sorted(cancelled) == ["a1", "a2"]
        assert wrote == []
        assert tool_events(agent.session) == [
            ("tool/call", "a1"),
            ("tool/call", "a2"),
            ("tool/result", "a1"),
            ("tool/result", "a2"),
        ]
        for result in of_type(agent.session, "tool/result"):
            assert result["isError"] is True
            assert result["error"] == {"name": "AbortError", "code": "ABORTED"}
            assert result["content"] == [{"type": "text", "text": "Error: aborted: stop now"}]
        assert turn_end_reasons(agent.session) == [{"kind": "aborted", "reason": "stop now"}]


async def test_unknown_and_unsafe_tools_are_barriers_run_alone() -> None:
    """safe, unknown, safe, unsafe, safe: each group runs after the one before it settled."""
    calls = [
        ("s1", "look", {"n": 1}),
        ("u1", "nowhere", {}),
        ("s2", "look", {"n": 2}),
        ("s3", "look", {"n": 3}),
        ("w1", "write", {}),
        ("s4", "look", {"n": 4}),
    ]
    async with Harness([tool_calls_response(*calls), text_response("ok")]) as h:
        trace: list[str] = []

        async def look(args: Any, execution: ToolExecution) -> Any:
            trace.append(f"start {execution.call_id}")
            await asyncio.sleep(0)
            trace.append(f"end {execution.call_id}")
            return text("seen")

        async def write(_args: Any, execution: ToolExecution) -> Any:
            trace.append(f"start {execution.call_id}")
            trace.append(f"end {execution.call_id}")
            return text("wrote")

        register(h, "look", look, safe=True)
        register(h, "write", write, safe=False)
        agent = h.agent()
        agent.send(text("go"))
        await agent.when_idle()
        assert trace == [
            "start s1",
            "end s1",
            "start s2",
            "start s3",
            "end s2",
            "end s3",
            "start w1",
            "end w1",
            "start s4",
            "end s4",
        ]
        results = {r["callId"]: r for r in of_type(agent.session, "tool/result")}
        assert results["u1"]["isError"] is True
        assert [cid for kind, cid in tool_events(agent.session) if kind == "tool/result"] == [c[0] for c in calls]


async def test_an_abort_between_groups_logs_no_further_call() -> None:
    """A call that aborts the step: the next group never starts and is never logged."""
    calls = [("x1", "stopper", {}), ("s1", "look", {}), ("s2", "look", {})]
    async with Harness([tool_calls_response(*calls)]) as h:

        async def stopper(_args: Any, execution: ToolExecution) -> Any:
            assert isinstance(execution.agent, ReactLoopAgent)
            execution.agent.abort("enough")
            await asyncio.sleep(0)
            return text("stopped")

        async def look(_args: Any, _execution: ToolExecution) -> Any:
            raise AssertionError("must not run")

        register(h, "stopper", stopper, safe=False)
        register(h, "look", look, safe=True)
        agent = h.agent()
        agent.send(text("go"))
        await agent.when_idle()
        assert tool_events(agent.session) == [("tool/call", "x1"), ("tool/result", "x1")]
        assert turn_end_reasons(agent.session) == [{"kind": "aborted", "reason": "enough"}]


async def test_an_abort_before_the_tools_start_logs_no_call() -> None:
    """The step-result waterfall aborts: neither a lone call nor a batch is logged."""
    for calls in ([("s1", "look", {})], [("s1", "look", {}), ("s2", "look", {})]):
        async with Harness([tool_calls_response(*calls)]) as h:

            async def look(_args: Any, _execution: ToolExecution) -> Any:
                raise AssertionError("must not run")

            register(h, "look", look, safe=True)
            agent = h.agent()

            def abort_then_log(subject: Any, _turn: int, _step: int, message: Message, next_: Any) -> Any:
                subject.abort("changed my mind")
                return next_()

            h.ctx.on(AGENT_STEP_RESULT, abort_then_log)
            agent.send(text("go"))
            await agent.when_idle()
            assert tool_events(agent.session) == []
            assert len(of_type(agent.session, "assistant/message")) == 1
            assert turn_end_reasons(agent.session) == [{"kind": "aborted", "reason": "changed my mind"}]


async def test_a_failing_append_stops_the_batch_and_cancels_what_runs() -> None:
    """A session listener raising on the first result: the call still running is cancelled, the step fails."""
    calls = [("p1", "quick", {}), ("p2", "hang", {}), ("p3", "hang", {})]
    async with Harness([tool_calls_response(*calls)], loop_config={"agents": [], "maxParallelToolCalls": 2}) as h:
        cancelled: list[str] = []

        async def quick(_args: Any, _execution: ToolExecution) -> Any:
            return text("quick")

        async def hang(_args: Any, execution: ToolExecution) -> Any:
            try:
                await asyncio.sleep(SAFETY)
            except asyncio.CancelledError:
                cancelled.append(execution.call_id)
                raise
            return text("never")

        register(h, "quick", quick, safe=True)
        register(h, "hang", hang, safe=True)

        def refuse(_session: Session, event: SessionEvent) -> None:
            if type(event) is ToolResultEvent and event.data.call_id == "p1":
                raise RuntimeError("disk full")

        h.ctx.on(SESSION_EVENT, refuse)
        agent = h.agent()
        agent.send(text("go"))
        await agent.when_idle()
        assert cancelled == ["p2"]
        assert tool_events(agent.session) == [("tool/call", "p1"), ("tool/call", "p2"), ("tool/result", "p1")]
        (reason,) = turn_end_reasons(agent.session)
        assert reason["kind"] == "error"
        assert "disk full" in reason["message"]


async def test_a_pool_of_one_runs_safe_calls_one_after_another() -> None:
    """maxParallelToolCalls 1 keeps the serial order even for safe calls."""
    calls = [("s1", "look", {}), ("s2", "look", {}), ("s3", "look", {})]
    async with Harness(
        [tool_calls_response(*calls), text_response("ok")], loop_config={"agents": [], "maxParallelToolCalls": 1}
    ) as h:
        trace: list[str] = []

        async def look(_args: Any, execution: ToolExecution) -> Any:
            trace.append(f"start {execution.call_id}")
            await asyncio.sleep(0)
            trace.append(f"end {execution.call_id}")
            return text("seen")

        register(h, "look", look, safe=True)
        agent = h.loop.create("main", AgentOptions(model="mock"))
        agent.send(text("go"))
        await agent.when_idle()
        assert trace == ["start s1", "end s1", "start s2", "end s2", "start s3", "end s3"]
        assert tool_events(agent.session) == [
            ("tool/call", "s1"),
            ("tool/result", "s1"),
            ("tool/call", "s2"),
            ("tool/result", "s2"),
            ("tool/call", "s3"),
            ("tool/result", "s3"),
        ]
