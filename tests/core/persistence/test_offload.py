"""Blocking work off the event loop: the contract ``run_blocking`` and ``BatchedOffload`` share, then the batches.

Both hand work to an executor, raise its exception as is, never abandon work handed
over when their caller is cancelled, and drop that caller's outcome quietly. The shared
tests run against each; the rest cover what batches add (at most ``width`` out, each
caller its own outcome).
"""

from __future__ import annotations

import asyncio
import errno
import gc
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, TypeAlias

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.core.persistence import BatchedOffload, run_blocking
from tests.core.persistence.threads import Gate, wait_in_thread
from tests.kernel.helpers import ticks

Offload: TypeAlias = Callable[[Callable[[], Any]], Awaitable[Any]]
"""How a test hands one piece of work over (and awaits it)."""


@pytest.fixture(params=["run_blocking", "BatchedOffload"])
def offload_to(request: pytest.FixtureRequest) -> Callable[[Executor | None], Offload]:
    """Either offload, bound to an executor (``None``: the loop's default)."""
    if request.param == "run_blocking":
        return lambda executor: lambda work: run_blocking(executor, work)
    return lambda executor: BatchedOffload(executor).run


class CountingExecutor(ThreadPoolExecutor):
    """A thread pool that counts the batches handed to it."""

    def __init__(self, workers: int = 4) -> None:
        super().__init__(max_workers=workers)
        self.submitted = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


# ------------------------------------------------------------------ the shared contract
async def test_the_work_runs_on_another_thread_and_its_result_comes_back(
    offload_to: Callable[[Executor | None], Offload],
) -> None:
    """(the loop's default executor, or one given)"""
    caller = threading.get_ident()
    assert await offload_to(None)(threading.get_ident) != caller
    with ThreadPoolExecutor(max_workers=1) as executor:
        assert await offload_to(executor)(lambda: 6 * 7) == 42


async def test_the_exception_of_the_work_is_raised_as_it_raised_it(
    offload_to: Callable[[Executor | None], Offload],
) -> None:
    def fail() -> None:
        raise OSError(errno.EIO, "device gone")

    with pytest.raises(OSError, match="device gone"):
        await offload_to(None)(fail)


async def test_a_cancelled_caller_waits_for_the_running_work_to_finish(
    offload_to: Callable[[Executor | None], Offload],
) -> None:
    """(cancellation never abandons work already handed to a thread, even when repeated)"""
    gate = Gate()
    done: list[str] = []

    def work() -> str:
        gate.pass_through()
        done.append("finished")
        return "result"

    task = asyncio.ensure_future(offload_to(None)(work))
    await wait_in_thread(gate.entered)
    task.cancel()
    await ticks(20)
    assert not task.done()
    task.cancel()
    await ticks(20)
    assert not task.done()
    gate.release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert done == ["finished"]


async def test_work_still_queued_when_its_caller_is_cancelled_still_runs(
    offload_to: Callable[[Executor | None], Offload],
) -> None:
    """(handed over means it will run: a single worker busy elsewhere runs it afterwards)"""
    gate = Gate()
    ran: list[str] = []
    with ThreadPoolExecutor(max_workers=1) as executor:
        offload = offload_to(executor)
        busy = asyncio.ensure_future(offload(gate.pass_through))
        await wait_in_thread(gate.entered)
        queued = asyncio.ensure_future(offload(lambda: ran.append("queued")))
        await ticks(20)
        queued.cancel()
        await ticks(20)
        assert not queued.done()
        gate.release.set()
        with pytest.raises(asyncio.CancelledError):
            await queued
        await busy
    assert ran == ["queued"]


async def test_the_outcome_of_work_whose_caller_was_cancelled_is_dropped_quietly(
    offload_to: Callable[[Executor | None], Offload],
) -> None:
    """(a failure after cancellation is not raised and not reported as never retrieved)"""
    gate = Gate()
    reported: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))

    def fail() -> None:
        gate.pass_through()
        raise OSError(errno.ENOSPC, "disk full")

    try:
        task = asyncio.ensure_future(offload_to(None)(fail))
        await wait_in_thread(gate.entered)
        task.cancel()
        await ticks(20)
        gate.release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        del task
        gc.collect()
    finally:
        loop.set_exception_handler(None)
    assert reported == []


async def test_work_its_executor_cancels_before_it_starts_raises_cancelled_error(
    offload_to: Callable[[Executor | None], Offload],
) -> None:
    """(an executor shut down with cancel_futures drops queued work: nothing ran, each caller is cancelled)"""
    gate = Gate()
    ran: list[str] = []
    executor = ThreadPoolExecutor(max_workers=1)
    busy = asyncio.ensure_future(asyncio.get_running_loop().run_in_executor(executor, gate.pass_through))
    await wait_in_thread(gate.entered)
    offload = offload_to(executor)
    queued = [asyncio.ensure_future(offload(lambda: ran.append("queued"))) for _ in range(2)]
    await ticks(20)
    executor.shutdown(wait=False, cancel_futures=True)
    for task in queued:
        with pytest.raises(asyncio.CancelledError):
            await task
    gate.release.set()
    await busy
    executor.shutdown()
    assert ran == []


# ------------------------------------------------------------------ batches
def test_a_width_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="width must be at least 1, got 0"):
        BatchedOffload(width=0)


async def test_work_that_waits_goes_in_one_batch_in_the_order_it_was_handed_over() -> None:
    """(width 1: while the first batch is out, three more pieces wait, then go together: two hops in all)"""
    gate = Gate()
    ran: list[str] = []
    with CountingExecutor() as executor:
        offload = BatchedOffload(executor, width=1)
        first = asyncio.ensure_future(offload.run(gate.pass_through))
        await wait_in_thread(gate.entered)
        rest = [asyncio.ensure_future(offload.run(lambda name=name: ran.append(name) or name)) for name in "abc"]
        await ticks(20)
        assert ran == []
        gate.release.set()
        await first
        assert await asyncio.gather(*rest) == ["a", "b", "c"]
        assert executor.submitted == 2
    assert ran == ["a", "b", "c"]


async def test_a_failure_is_raised_to_its_own_caller_only() -> None:
    """(the other pieces of the batch still run and return)"""
    gate = Gate()

    def fail() -> None:
        raise OSError(errno.EIO, "device gone")

    with ThreadPoolExecutor(max_workers=1) as executor:
        offload = BatchedOffload(executor, width=1)
        first = asyncio.ensure_future(offload.run(gate.pass_through))
        await wait_in_thread(gate.entered)
        before = asyncio.ensure_future(offload.run(lambda: "before"))
        failing = asyncio.ensure_future(offload.run(fail))
        after = asyncio.ensure_future(offload.run(lambda: "after"))
        gate.release.set()
        await first
        assert await before == "before"
        with pytest.raises(OSError, match="device gone"):
            await failing
        assert await after == "after"


async def test_a_blocked_piece_holds_up_only_its_own_batch_while_another_place_is_free() -> None:
    """(width 2: a stalled write leaves the other place to the rest)"""
    gate = Gate()
    offload = BatchedOffload(width=2)
    stalled = asyncio.ensure_future(offload.run(gate.pass_through))
    await wait_in_thread(gate.entered)
    assert await offload.run(lambda: "through") == "through"
    assert not stalled.done()
    gate.release.set()
    await stalled


async def test_a_waiting_piece_whose_caller_is_cancelled_still_runs_and_its_failure_is_dropped_quietly() -> None:
    """(width 1: the piece waits in the offload, not the executor, when its caller is cancelled; it still goes
    with the next batch, and its outcome is neither raised nor reported as never retrieved)"""
    gate = Gate()
    ran: list[str] = []
    reported: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))

    def fail() -> None:
        ran.append("waiting")
        raise OSError(errno.ENOSPC, "disk full")

    try:
        with CountingExecutor(workers=1) as executor:
            offload = BatchedOffload(executor, width=1)
            busy = asyncio.ensure_future(offload.run(gate.pass_through))
            await wait_in_thread(gate.entered)
            waiting = asyncio.ensure_future(offload.run(fail))
            await ticks(20)
            assert executor.submitted == 1
            waiting.cancel()
            await ticks(20)
            assert not waiting.done()
            gate.release.set()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            await busy
        del waiting
        gc.collect()
    finally:
        loop.set_exception_handler(None)
    assert ran == ["waiting"]
    assert reported == []


async def test_an_executor_already_shut_down_refuses_the_batch_to_each_of_its_callers() -> None:
    """(at once when nothing is out; when a batch comes back, the waiting ones get the refusal; nothing hangs)"""
    gate = Gate()
    executor = ThreadPoolExecutor(max_workers=1)
    offload = BatchedOffload(executor, width=1)
    busy = asyncio.ensure_future(offload.run(gate.pass_through))
    await wait_in_thread(gate.entered)
    waiting = [asyncio.ensure_future(offload.run(lambda: "never")) for _ in range(2)]
    await ticks(20)
    executor.shutdown(wait=False)
    gate.release.set()
    await busy
    for task in waiting:
        with pytest.raises(RuntimeError, match="after shutdown"):
            await task
    with pytest.raises(RuntimeError, match="after shutdown"):
        await offload.run(lambda: "never")
    executor.shutdown()


class Halt(BaseException):
    """Not an ``Exception``: it ends the batch it is raised in."""


async def test_a_base_exception_ends_its_batch_and_reaches_every_caller_of_it() -> None:
    """(the batch stops there; nothing after the raising piece runs; the next batch is sent as usual)"""
    gate = Gate()
    ran: list[str] = []

    def halt() -> None:
        raise Halt("stop")

    with ThreadPoolExecutor(max_workers=1) as executor:
        offload = BatchedOffload(executor, width=1)
        first = asyncio.ensure_future(offload.run(gate.pass_through))
        await wait_in_thread(gate.entered)
        batch = [
            asyncio.ensure_future(offload.run(lambda: ran.append("before"))),
            asyncio.ensure_future(offload.run(halt)),
            asyncio.ensure_future(offload.run(lambda: ran.append("after"))),
        ]
        gate.release.set()
        await first
        for task in batch:
            with pytest.raises(Halt, match="stop"):
                await task
        assert await offload.run(lambda: "next") == "next"
    assert ran == ["before"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=30), st.integers(1, 3))
def test_every_piece_runs_once_and_its_caller_gets_its_own_outcome(pieces: list[tuple[int, bool]], width: int) -> None:
    """(any mix of pieces handed over in bursts, some failing: each runs exactly once, each caller gets
    exactly what its piece returned or raised, and never more than ``width`` pieces run at once)"""

    async def scenario() -> None:
        ran: list[int] = []
        lock = threading.Lock()
        out = 0
        most = 0

        def piece(index: int, fails: bool) -> int:
            nonlocal out, most
            with lock:
                out += 1
                most = max(most, out)
            try:
                ran.append(index)
                if fails:
                    raise ValueError(index)
                return index
            finally:
                with lock:
                    out -= 1

        with CountingExecutor(workers=4) as executor:
            offload = BatchedOffload(executor, width=width)
            tasks: list[asyncio.Future[int]] = []
            for index, (pause, fails) in enumerate(pieces):
                tasks.append(asyncio.ensure_future(offload.run(lambda i=index, f=fails: piece(i, f))))
                for _ in range(pause):
                    await asyncio.sleep(0)
            results = await asyncio.gather(*tasks, return_exceptions=True)
            assert executor.submitted <= len(pieces)
        assert sorted(ran) == list(range(len(pieces)))
        for index, ((_, fails), result) in enumerate(zip(pieces, results, strict=True)):
            if fails:
                assert isinstance(result, ValueError)
                assert result.args == (index,)
            else:
                assert result == index
        assert most <= width

    asyncio.run(scenario())
