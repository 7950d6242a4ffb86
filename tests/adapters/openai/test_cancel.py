"""Cancellation of llm-openai streams: abort signal, consumer ``aclose()``, task cancel, pool health.

SPEC §11 ``review fixes`` titles plus the acceptance check: cancelling 200 streams in a
row mid-response leaves no open connection and no pending task, with an SDK client
whose pool holds ONE connection (a single leak would stall the next request).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx2
import openai
import pytest

from dsh.adapters.openai import OpenAIAdapter
from dsh.core.llm import AbortedFinish, FinishChunk, StopFinish, StreamChunk, TextDeltaChunk, to_json
from dsh.kernel import AbortController, aborted_signal
from dsh.testing.wire import Reply, Silence, TextDelta, Usage, WireServer, text_reply
from tests.adapters.openai.helpers import KEY, collect, kinds, options

STALL = Reply([TextDelta("partial")], ending="stall")
ABORTED: StreamChunk = FinishChunk(reason=AbortedFinish())


def one_connection_client(base_url: str) -> openai.AsyncOpenAI:
    """An SDK client whose pool holds one connection: a leaked connection fails the next call."""
    http = httpx2.AsyncClient(limits=httpx2.Limits(max_connections=1), timeout=httpx2.Timeout(5.0))
    return openai.AsyncOpenAI(base_url=base_url, api_key=KEY, max_retries=0, http_client=http)


def other_tasks() -> set[asyncio.Task[object]]:
    return {task for task in asyncio.all_tasks() if task is not asyncio.current_task()}


async def first_chunks(stream: AsyncIterator[StreamChunk]) -> list[StreamChunk]:
    """Read until the stalled server's text arrived (block-start, text-delta)."""
    return [await anext(stream), await anext(stream)]


# ------------------------------------------------------------------------- review fixes
async def test_aborts_the_upstream_request_when_the_consumer_stops_streaming_early(server: WireServer) -> None:
    """review fixes / aborts the upstream request when the consumer stops streaming early"""
    server.add(STALL)
    async with OpenAIAdapter(KEY, server.base_url) as adapter:
        stream = adapter.stream(options())
        assert kinds(await first_chunks(stream)) == ["block-start", "text-delta"]
        assert server.open_connections == 1
        await stream.aclose()  # type: ignore[attr-defined]
        await server.wait_for_connections(0)  # the server saw the socket close


async def test_honors_a_pre_aborted_caller_signal(server: WireServer) -> None:
    """review fixes: abort wiring / honors a pre-aborted caller signal"""
    server.add(text_reply("never"))
    async with OpenAIAdapter(KEY, server.base_url) as adapter:
        chunks = await collect(adapter.stream(options(signal=aborted_signal("too late"))))
    assert chunks == [ABORTED]
    assert server.requests == []
    assert server.total_connections == 0


async def test_propagates_a_mid_stream_caller_abort_to_the_upstream_request(server: WireServer) -> None:
    """review fixes: abort wiring / propagates a mid-stream caller abort to the upstream request"""
    server.add(Reply([TextDelta("partial"), Usage(7, 1)], ending="stall"))
    async with OpenAIAdapter(KEY, server.base_url) as adapter:
        controller = AbortController()
        stream = adapter.stream(options(signal=controller.signal))
        await first_chunks(stream)
        pending = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0)  # let the read start and stall
        controller.abort("user pressed stop")
        await server.wait_for_connections(0)  # closed at once, before the consumer reads on
        rest = [await pending, *await collect(stream)]
    assert to_json(rest) == [{"type": "usage", "usage": {"inputTokens": 7, "outputTokens": 1}}, to_json(ABORTED)]


async def test_an_abort_while_waiting_for_the_answer_interrupts_the_request(server: WireServer) -> None:
    """an abort while the server has not answered yet cancels the request and finishes aborted"""
    server.add(Silence())
    async with OpenAIAdapter(KEY, server.base_url) as adapter:
        controller = AbortController()
        pending = asyncio.ensure_future(collect(adapter.stream(options(signal=controller.signal))))
        await server.wait_for_requests(1)
        controller.abort("stop waiting")
        assert await pending == [ABORTED]
        await server.wait_for_connections(0)


async def test_cancelling_the_consumer_task_while_waiting_for_the_answer_closes_the_connection(
    server: WireServer,
) -> None:
    """task cancellation during the request propagates CancelledError and closes the connection"""
    server.add(Silence())
    async with OpenAIAdapter(KEY, server.base_url) as adapter:
        task = asyncio.ensure_future(collect(adapter.stream(options(signal=AbortController().signal))))
        await server.wait_for_requests(1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await server.wait_for_connections(0)
    assert other_tasks() == set()


async def test_a_signal_that_never_fires_changes_nothing(server: WireServer) -> None:
    """with a live signal the stream completes normally and unhooks from the signal"""
    server.add(text_reply("a", "b"))
    async with OpenAIAdapter(KEY, server.base_url) as adapter:
        controller = AbortController()
        chunks = await collect(adapter.stream(options(signal=controller.signal)))
        assert kinds(chunks) == ["block-start", "text-delta", "text-delta", "block-end", "finish"]
        controller.abort("after the fact")  # nothing listens any more; nothing breaks


async def test_an_abort_after_the_answer_arrived_but_before_it_was_read_wins(server: WireServer) -> None:
    """once the signal fired, the stream ends aborted even if the whole answer is already buffered"""
    server.add(text_reply("complete"))
    async with OpenAIAdapter(KEY, server.base_url) as adapter:
        controller = AbortController()
        stream = adapter.stream(options(signal=controller.signal))
        assert kinds(await first_chunks(stream)) == ["block-start", "text-delta"]
        controller.abort("late")
        assert await collect(stream) == [ABORTED]


# -------------------------------------------------------------------------- pool health
async def cancel_by_abort(adapter: OpenAIAdapter) -> None:
    controller = AbortController()
    stream = adapter.stream(options(signal=controller.signal))
    await first_chunks(stream)
    pending = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0)
    controller.abort("cancelled")
    assert await pending == ABORTED
    await stream.aclose()  # type: ignore[attr-defined]


async def cancel_by_aclose(adapter: OpenAIAdapter) -> None:
    stream = adapter.stream(options(signal=AbortController().signal))
    await first_chunks(stream)
    await stream.aclose()  # type: ignore[attr-defined]


async def cancel_by_task_cancel(adapter: OpenAIAdapter) -> None:
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


async def cancel_without_signal(adapter: OpenAIAdapter) -> None:
    stream = adapter.stream(options())
    await first_chunks(stream)
    await stream.aclose()  # type: ignore[attr-defined]


CANCELS: list[Callable[[OpenAIAdapter], Awaitable[None]]] = [
    cancel_by_abort,
    cancel_by_aclose,
    cancel_by_task_cancel,
    cancel_without_signal,
]


async def test_cancelling_200_streams_in_a_row_leaves_no_open_connection_and_no_pending_task() -> None:
    """cancelling 200 streams in a row mid-response leaves no open connection and no pending task"""
    async with WireServer([*([STALL] * 200), text_reply("still healthy")]) as server:
        async with one_connection_client(server.base_url) as client:
            adapter = OpenAIAdapter(KEY, client=client)
            for round_number in range(200):
                await CANCELS[round_number % len(CANCELS)](adapter)
            chunks = await collect(adapter.stream(options()))
            assert chunks[1] == TextDeltaChunk(index=0, text="still healthy")
            assert chunks[-1] == FinishChunk(reason=StopFinish())
        await server.wait_for_connections(0)
        assert server.total_connections == 201  # each cancelled stream dropped its connection
        assert len(server.requests) == 201
        assert other_tasks() == set()
