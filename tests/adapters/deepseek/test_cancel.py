"""Cancellation of DeepSeek streams: abort signal, consumer ``aclose()``, task cancel, pool health.

The acceptance check: cancelling 200 streams in a row mid-response leaves no open
connection and no pending task, with a session limited to ONE connection (a single leak
would stall the next request on the pool).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import aiohttp
import pytest

from dsh.adapters.deepseek import DeepSeekAdapter
from dsh.core.llm import StreamChunk, TextDeltaChunk
from dsh.kernel import AbortController, AbortError, aborted_signal
from dsh.testing.wire import Reply, Silence, TextDelta, WireServer, text_reply
from tests.adapters.deepseek.helpers import FakeResponse, collect, fake_session, kinds, options, source

KEY = "sk-test"
STALL = Reply([TextDelta("partial")], ending="stall")


def one_connection_session() -> aiohttp.ClientSession:
    """A session that opens at most one connection at a time and gives up on a silent server after 5 s."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1), timeout=aiohttp.ClientTimeout(sock_read=5.0))


def other_tasks() -> set[asyncio.Task[object]]:
    return {task for task in asyncio.all_tasks() if task is not asyncio.current_task()}


async def first_chunks(stream: AsyncIterator[StreamChunk]) -> list[StreamChunk]:
    """Read until the stalled server's text arrived (block-start, text-delta)."""
    return [await anext(stream), await anext(stream)]


async def cancel_by_abort(adapter: DeepSeekAdapter) -> None:
    controller = AbortController()
    stream = adapter.stream(options(signal=controller.signal))
    await first_chunks(stream)
    pending = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0)  # let the read start and stall
    controller.abort("cancelled")
    with pytest.raises(AbortError):
        await pending


async def cancel_by_aclose(adapter: DeepSeekAdapter) -> None:
    stream = adapter.stream(options(signal=AbortController().signal))
    await first_chunks(stream)
    await stream.aclose()  # type: ignore[attr-defined]


async def cancel_by_task_cancel(adapter: DeepSeekAdapter) -> None:
    reached = asyncio.Event()

    async def consume() -> None:
        stream = adapter.stream(options(signal=AbortController().signal))
        try:
            await first_chunks(stream)
            reached.set()
            await anext(stream)  # stalls until cancelled
        finally:
            await stream.aclose()  # type: ignore[attr-defined]

    task = asyncio.ensure_future(consume())
    await reached.wait()
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def cancel_without_signal(adapter: DeepSeekAdapter) -> None:
    stream = adapter.stream(options())
    await first_chunks(stream)
    await stream.aclose()  # type: ignore[attr-defined]


CANCELS: list[Callable[[DeepSeekAdapter], object]] = [
    cancel_by_abort,
    cancel_by_aclose,
    cancel_by_task_cancel,
    cancel_without_signal,
]


async def test_cancelling_200_streams_in_a_row_leaves_no_open_connection_and_no_pending_task() -> None:
    """cancelling 200 streams in a row mid-response leaves no open connection and no pending task"""
    async with WireServer([*([STALL] * 200), text_reply("still healthy")]) as server:
        async with (
            one_connection_session() as session,
            DeepSeekAdapter(KEY, server.base_url, session=session) as adapter,
        ):
            for round_number in range(200):
                await CANCELS[round_number % len(CANCELS)](adapter)  # type: ignore[misc]
            chunks = await collect(adapter.stream(options()))
            assert chunks[1] == TextDeltaChunk(index=0, text="still healthy")
        await server.wait_for_connections(0)
        assert server.total_connections == 201  # each cancelled stream dropped its connection
        assert len(server.requests) == 201
        assert other_tasks() == set()


async def test_a_pre_aborted_signal_fails_before_any_request() -> None:
    """an already-aborted signal raises AbortError with its reason and sends nothing"""
    async with WireServer([text_reply("never")]) as server, DeepSeekAdapter(KEY, server.base_url) as adapter:
        with pytest.raises(AbortError) as caught:
            await collect(adapter.stream(options(signal=aborted_signal("too late"))))
        assert caught.value.reason == "too late"
        assert server.requests == []
        assert server.total_connections == 0


async def test_an_abort_while_waiting_for_the_answer_interrupts_the_request() -> None:
    """an abort while the server has not answered yet cancels the request at once"""
    async with WireServer([Silence()]) as server, DeepSeekAdapter(KEY, server.base_url) as adapter:
        controller = AbortController()
        pending = asyncio.ensure_future(collect(adapter.stream(options(signal=controller.signal))))
        await server.wait_for_requests(1)
        controller.abort("stop waiting")
        with pytest.raises(AbortError, match="stop waiting"):
            await pending
        await server.wait_for_connections(0)


async def test_cancelling_the_consumer_task_while_waiting_for_the_answer_closes_the_connection() -> None:
    """task cancellation during the request closes the connection too"""
    async with WireServer([Silence()]) as server, DeepSeekAdapter(KEY, server.base_url) as adapter:
        task = asyncio.ensure_future(collect(adapter.stream(options(signal=AbortController().signal))))
        await server.wait_for_requests(1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await server.wait_for_connections(0)


async def test_an_answer_that_lands_while_the_consumer_is_cancelled_is_closed() -> None:
    """a response arriving while the consumer is being cancelled is closed, not leaked"""
    body = FakeResponse(source([b"data: [DONE]\n\n"]))
    consumer: list[asyncio.Task[object]] = []

    async def network(url: str) -> FakeResponse:
        consumer[0].cancel()  # the consumer is cancelled while the answer arrives
        return body

    async with DeepSeekAdapter(KEY, "http://deepseek.test", session=fake_session(network)) as adapter:
        task = asyncio.ensure_future(collect(adapter.stream(options(signal=AbortController().signal))))
        consumer.append(task)
        with pytest.raises(asyncio.CancelledError):
            await task
    assert body.closed


async def test_a_failure_that_lands_while_the_consumer_is_cancelled_is_dropped() -> None:
    """a request failing while the consumer is being cancelled surfaces only the cancellation"""
    consumer: list[asyncio.Task[object]] = []

    async def network(url: str) -> FakeResponse:
        consumer[0].cancel()
        raise aiohttp.ClientConnectionError("refused")

    async with DeepSeekAdapter(KEY, "http://deepseek.test", session=fake_session(network)) as adapter:
        task = asyncio.ensure_future(collect(adapter.stream(options(signal=AbortController().signal))))
        consumer.append(task)
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_body_bytes_that_land_while_the_consumer_is_cancelled_are_dropped() -> None:
    """body bytes arriving while the consumer is being cancelled are dropped; only the cancellation surfaces"""
    consumer: list[asyncio.Task[object]] = []

    async def body() -> AsyncIterator[bytes]:
        consumer[0].cancel()  # the consumer is cancelled while it waits for these bytes
        await asyncio.sleep(0)
        yield b'data: {"choices":[]}\n\n'

    async def network(url: str) -> FakeResponse:
        return FakeResponse(body())

    async with DeepSeekAdapter(KEY, "http://deepseek.test", session=fake_session(network)) as adapter:
        task = asyncio.ensure_future(collect(adapter.stream(options(signal=AbortController().signal))))
        consumer.append(task)
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_a_signal_that_never_fires_changes_nothing() -> None:
    """with a live signal the stream completes normally and unhooks from the signal"""
    async with WireServer([text_reply("a", "b")]) as server, DeepSeekAdapter(KEY, server.base_url) as adapter:
        controller = AbortController()
        chunks = await collect(adapter.stream(options(signal=controller.signal)))
        assert kinds(chunks) == ["block-start", "text-delta", "text-delta", "block-end", "finish"]
        controller.abort("after the fact")  # nothing listens any more; nothing breaks


async def test_a_consumer_cancelled_again_while_the_request_unwinds_still_waits_for_it() -> None:
    """a second cancellation during aclose's wait for the request to unwind: the request still ends first"""
    waiting = asyncio.Event()
    unwinding = asyncio.Event()
    release = asyncio.Event()
    ended: list[str] = []

    async def network(url: str) -> FakeResponse:
        try:
            waiting.set()
            await asyncio.Event().wait()  # no answer, ever
        except asyncio.CancelledError:
            unwinding.set()
            await release.wait()  # a slow unwind (a proxy tunnel closing, say)
            ended.append("unwound")
            raise
        raise AssertionError("unreachable")  # pragma: no cover - the wait above never returns

    async with DeepSeekAdapter(KEY, "http://deepseek.test", session=fake_session(network)) as adapter:
        task = asyncio.ensure_future(collect(adapter.stream(options(signal=AbortController().signal))))
        await waiting.wait()
        task.cancel()  # the consumer gives up: aclose cancels the request and waits for it
        await unwinding.wait()
        task.cancel()  # and is cancelled again while it waits
        await asyncio.sleep(0)
        assert not task.done()  # still waiting for the request to end
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert ended == ["unwound"]
    assert other_tasks() == set()
