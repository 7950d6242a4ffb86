"""Connection reuse and body draining of DeepSeek streams, over real HTTP against the wire server.

A completed stream must hand its connection back to the pool: closing the stream reads the rest
of the body after ``[DONE]`` (bounded by ``drain_timeout``) before it closes the
response. Before this was so, every call opened a new connection and the 101st call of
a process waited 30 s for its HTTP client's pool and failed. aiohttp pools a
connection once its body was read to the end; the adapter closes every response,
which drops the connection of any body left half-read.
"""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import AsyncIterator

import pytest

from dsh.adapters.deepseek import DeepSeekAdapter
from dsh.core.errors import LlmError
from dsh.core.llm import BlockEndChunk, BlockStartChunk, FinishChunk, StopFinish, StreamChunk, TextBlock, TextDeltaChunk
from dsh.kernel import AbortController, AbortError
from dsh.testing.wire import Raw, RawBytes, RawResponse, Reply, Silence, TextDelta, WireServer, text_reply
from tests.adapters.deepseek.helpers import FakeResponse, collect, fake_session, kinds, options, source

KEY = "sk-test"
DONE_THEN_STALL = Reply([TextDelta("a"), Raw("[DONE]")], ending="stall")
"""``[DONE]``, then a body that never ends (the server waits for the client to go away)."""


async def read_to_finish(stream: AsyncIterator[StreamChunk]) -> list[StreamChunk]:
    """Chunks up to and including ``finish``, leaving the stream open."""
    seen = [await anext(stream)]
    while type(seen[-1]) is not FinishChunk:
        seen.append(await anext(stream))
    return seen


async def test_sequential_streams_reuse_one_connection() -> None:
    """after N sequential streams against one WireServer, server.total_connections == 1"""
    async with WireServer([text_reply("hi")], repeat=True) as server, DeepSeekAdapter(KEY, server.base_url) as adapter:
        for _ in range(20):
            chunks = await collect(adapter.stream(options()))
            assert chunks[-1] == FinishChunk(reason=StopFinish())
        assert server.total_connections == 1
        assert server.open_connections == 1  # idle in the pool, not leaked as active
        assert len(server.requests) == 20


async def test_150_sequential_calls_through_one_adapter_with_the_default_pool_all_succeed() -> None:
    """150 calls through one adapter and its default client all succeed over one connection"""
    async with WireServer([text_reply("ok")], repeat=True) as server, DeepSeekAdapter(KEY, server.base_url) as adapter:
        for number in range(150):
            chunks = await collect(adapter.stream(options(prompt=f"call {number}")))
            assert chunks[1] == TextDeltaChunk(index=0, text="ok")
        assert len(server.requests) == 150
        assert server.total_connections == 1


async def test_the_request_asks_for_an_unencoded_body() -> None:
    """the request sends accept-encoding: identity, so the body is read as it arrives"""
    async with WireServer([text_reply("x")]) as server, DeepSeekAdapter(KEY, server.base_url) as adapter:
        await collect(adapter.stream(options()))
    assert server.requests[0].headers["accept-encoding"] == "identity"


async def test_data_after_DONE_is_read_and_dropped_and_the_connection_is_reused() -> None:
    """events after [DONE] are drained, never yielded; the connection then carries the next call"""
    after_done = Reply([TextDelta("a"), Raw("[DONE]"), TextDelta("late"), Raw("[DONE]")], ending="end")
    async with (
        WireServer([after_done, text_reply("next")]) as server,
        DeepSeekAdapter(KEY, server.base_url) as adapter,
    ):
        first = await collect(adapter.stream(options()))
        assert kinds(first) == ["block-start", "text-delta", "block-end", "finish"]
        assert first[2] == BlockEndChunk(index=0, block=TextBlock("a"))
        second = await collect(adapter.stream(options()))
        assert second[1] == TextDeltaChunk(index=0, text="next")
        assert server.total_connections == 1


async def test_a_body_that_does_not_end_after_DONE_is_dropped_after_the_drain_timeout() -> None:
    """the tail read after [DONE] is bounded: a stalled body is closed and the next call connects anew"""
    async with (
        WireServer([DONE_THEN_STALL, text_reply("fresh")]) as server,
        DeepSeekAdapter(KEY, server.base_url, drain_timeout=0.01) as adapter,
    ):
        chunks = await collect(adapter.stream(options()))
        assert kinds(chunks) == ["block-start", "text-delta", "block-end", "finish"]
        await server.wait_for_connections(0)  # the stalled connection was dropped, not pooled
        assert (await collect(adapter.stream(options())))[1] == TextDeltaChunk(index=0, text="fresh")
        assert server.total_connections == 2


async def test_an_abort_while_draining_drops_the_connection_at_once() -> None:
    """the signal still cuts the tail read short; the completed stream ends without an error"""
    async with (
        WireServer([DONE_THEN_STALL]) as server,
        DeepSeekAdapter(KEY, server.base_url, drain_timeout=50.0) as adapter,
    ):
        controller = AbortController()
        stream = adapter.stream(options(signal=controller.signal))
        assert kinds(await read_to_finish(stream))[-1] == "finish"
        ending = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0)  # the stream is now waiting for the drain
        assert not ending.done()
        controller.abort("enough")
        with pytest.raises(StopAsyncIteration):
            await ending
        await server.wait_for_connections(0)


async def test_cancelling_the_consumer_while_draining_drops_the_connection() -> None:
    """task cancellation during the tail read stops the read and closes the connection"""
    async with (
        WireServer([DONE_THEN_STALL]) as server,
        DeepSeekAdapter(KEY, server.base_url, drain_timeout=50.0) as adapter,
    ):
        stream = adapter.stream(options())
        await read_to_finish(stream)
        ending = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0)  # the stream is now waiting for the drain
        ending.cancel()
        with pytest.raises(asyncio.CancelledError):
            await ending
        await server.wait_for_connections(0)


async def test_closing_a_finished_stream_before_its_end_still_reuses_the_connection() -> None:
    """a consumer that stops right after finish (aclose) does not cost the connection"""
    async with (
        WireServer([text_reply("a"), text_reply("b")]) as server,
        DeepSeekAdapter(KEY, server.base_url) as adapter,
    ):
        stream = adapter.stream(options())
        await read_to_finish(stream)
        await stream.aclose()  # type: ignore[attr-defined]
        assert kinds(await collect(adapter.stream(options())))[-1] == "finish"
        assert server.total_connections == 1


async def test_a_malformed_payload_fails_after_the_chunks_before_it_and_keeps_the_connection() -> None:
    """MALFORMED_RESPONSE is raised after the earlier chunks; the body is drained so the connection is reused"""
    async with (
        WireServer([Reply([TextDelta("ok"), Raw("{not json")]), text_reply("again")]) as server,
        DeepSeekAdapter(KEY, server.base_url) as adapter,
    ):
        seen: list[StreamChunk] = []
        with pytest.raises(LlmError) as caught:
            async for chunk in adapter.stream(options()):
                seen.append(chunk)
        assert caught.value.code == "MALFORMED_RESPONSE"
        assert str(caught.value) == "malformed SSE payload: {not json"
        assert kinds(seen) == ["block-start", "text-delta"]
        assert (await collect(adapter.stream(options())))[1] == TextDeltaChunk(index=0, text="again")
        assert server.total_connections == 1


async def test_an_unterminated_final_DONE_completes_the_stream() -> None:
    """a body ending in "data: [DONE]" without its blank line still finishes normally"""
    reply = Reply([TextDelta("tail"), RawBytes(b"data: [DONE]")], ending="end")
    async with WireServer([reply]) as server, DeepSeekAdapter(KEY, server.base_url) as adapter:
        chunks = await collect(adapter.stream(options()))
    assert kinds(chunks) == ["block-start", "text-delta", "block-end", "finish"]


async def test_a_final_event_left_without_its_blank_line_is_delivered_before_STREAM_CLOSED() -> None:
    """an unterminated final event that is not [DONE] is translated, then the stream fails STREAM_CLOSED"""
    reply = Reply([TextDelta("a"), RawBytes(b'data: {"choices":[{"delta":{"content":"b"}}]}')], ending="end")
    async with WireServer([reply]) as server, DeepSeekAdapter(KEY, server.base_url) as adapter:
        seen: list[StreamChunk] = []
        with pytest.raises(LlmError) as caught:
            async for chunk in adapter.stream(options()):
                seen.append(chunk)
    assert caught.value.code == "STREAM_CLOSED"
    assert [getattr(chunk, "text", None) for chunk in seen] == [None, "a", "b"]


async def test_events_and_characters_split_across_HTTP_chunks_are_reassembled() -> None:
    """an event (and a multi-byte character in it) cut across body pieces arrives whole"""
    event = 'data: {"choices":[{"delta":{"content":"héllo"}}]}\n\n'.encode()
    cut = event.index("é".encode()) + 1  # inside the two-byte character
    reply = Reply([RawBytes(event[:cut]), RawBytes(event[cut:-1]), RawBytes(event[-1:])])
    async with WireServer([reply]) as server, DeepSeekAdapter(KEY, server.base_url) as adapter:
        chunks = await collect(adapter.stream(options()))
    assert chunks[1] == TextDeltaChunk(index=0, text="héllo")


async def test_a_body_encoded_anyway_is_decoded() -> None:
    """a server that gzips the stream despite accept-encoding: identity is still understood"""
    body = gzip.compress(b'data: {"choices":[{"delta":{"content":"zipped"}}]}\n\ndata: [DONE]\n\n')
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\n"
    answer = RawResponse(head + b"content-length: %d\r\n\r\n" % len(body) + body)
    async with WireServer([answer]) as server, DeepSeekAdapter(KEY, server.base_url) as adapter:
        chunks = await collect(adapter.stream(options()))
    assert chunks[1] == TextDeltaChunk(index=0, text="zipped")
    assert chunks[-1] == FinishChunk(reason=StopFinish())


async def test_an_abort_between_chunks_of_one_read_stops_the_stream_at_once() -> None:
    """chunks handed over in one batch are not yielded after the signal fired"""
    async with WireServer([text_reply("one read")]) as server, DeepSeekAdapter(KEY, server.base_url) as adapter:
        controller = AbortController()
        stream = adapter.stream(options(signal=controller.signal))
        assert type(await anext(stream)) is BlockStartChunk  # its text-delta came in the same batch
        controller.abort("now")
        with pytest.raises(AbortError) as caught:
            await anext(stream)
        assert caught.value.reason == "now"


async def stream_body(body: FakeResponse) -> list[StreamChunk]:
    async def network(url: str) -> FakeResponse:
        return body

    async with DeepSeekAdapter(KEY, "http://deepseek.test", session=fake_session(network)) as adapter:
        return await collect(adapter.stream(options()))


async def test_a_body_that_ends_at_once_is_an_empty_response() -> None:
    """a 200 whose body ends before any byte: EMPTY_RESPONSE"""
    with pytest.raises(LlmError) as caught:
        await stream_body(FakeResponse(source([])))
    assert caught.value.code == "EMPTY_RESPONSE"


async def test_pieces_of_the_body_after_DONE_are_read_to_the_end_and_dropped() -> None:
    """the body's pieces after [DONE] are drained (so the connection can be pooled), not translated"""
    body = FakeResponse(source([b'data: {"choices":[{"delta":{"content":"x"}}]}\n\ndata: [DONE]\n\n', b"late", b"r"]))
    chunks = await stream_body(body)
    assert kinds(chunks) == ["block-start", "text-delta", "block-end", "finish"]
    assert await body.read() == b""
    assert body.closed


async def test_a_piece_that_completes_no_event_waits_for_the_next() -> None:
    """a body piece inside an event yields nothing until the piece that ends it"""
    event = b'data: {"choices":[{"delta":{"content":"whole"}}]}\n\ndata: [DONE]\n\n'
    chunks = await stream_body(FakeResponse(source([event[:9], event[9:]])))
    assert chunks[1] == TextDeltaChunk(index=0, text="whole")


async def test_an_unexpected_failure_while_draining_after_DONE_does_not_fail_the_stream() -> None:
    """once [DONE] arrived, whatever goes wrong reading the tail is not the stream's outcome"""

    async def body() -> AsyncIterator[bytes]:
        yield b'data: {"choices":[{"delta":{"content":"x"}}]}\n\ndata: [DONE]\n\n'
        raise RuntimeError("the tail broke")

    response = FakeResponse(body())
    chunks = await stream_body(response)
    assert kinds(chunks) == ["block-start", "text-delta", "block-end", "finish"]
    assert response.closed


async def test_a_server_that_never_answers_fails_NETWORK_after_the_read_bound() -> None:
    """no head within read_timeout: NETWORK naming the URL, its cause a TimeoutError; no connection left open"""
    async with (
        WireServer([Silence()]) as server,
        DeepSeekAdapter(KEY, server.base_url, read_timeout=0.2) as adapter,
    ):
        with pytest.raises(LlmError) as caught:
            await collect(adapter.stream(options()))
        assert caught.value.code == "NETWORK"
        assert server.base_url in str(caught.value)
        assert "no data for 0.2 s" in str(caught.value)
        assert isinstance(caught.value.cause, TimeoutError)
        await server.wait_for_connections(0)


async def test_a_body_that_stalls_fails_STREAM_CLOSED_after_the_chunks_before_it() -> None:
    """the events sent, then nothing for read_timeout: those chunks, then STREAM_CLOSED (a TimeoutError)"""
    seen: list[StreamChunk] = []
    async with (
        WireServer([Reply([TextDelta("a"), TextDelta("b")], ending="stall")]) as server,
        DeepSeekAdapter(KEY, server.base_url, read_timeout=0.2) as adapter,
    ):
        with pytest.raises(LlmError) as caught:
            async for chunk in adapter.stream(options()):
                seen.append(chunk)
        assert caught.value.code == "STREAM_CLOSED"
        assert "stalled: no data for 0.2 s" in str(caught.value)
        assert isinstance(caught.value.cause, TimeoutError)
        assert [chunk.text for chunk in seen if type(chunk) is TextDeltaChunk] == ["a", "b"]
        await server.wait_for_connections(0)


async def test_a_stream_longer_than_the_read_bound_whose_reads_each_come_in_time_completes() -> None:
    """the bound is per read, not per stream: 8 events 0.05 s apart under a 0.15 s bound all arrive"""
    reply = Reply([TextDelta(str(n)) for n in range(8)])
    async with (
        WireServer([reply], pace=0.05) as server,
        DeepSeekAdapter(KEY, server.base_url, read_timeout=0.15) as adapter,
    ):
        chunks = await collect(adapter.stream(options()))
    assert "".join(chunk.text for chunk in chunks if type(chunk) is TextDeltaChunk) == "01234567"
    assert chunks[-1] == FinishChunk(reason=StopFinish())


async def test_the_read_bound_does_not_cut_the_drain_after_DONE() -> None:
    """once [DONE] settled the stream, only drain_timeout bounds the tail: a shorter read bound changes nothing"""
    async with (
        WireServer([DONE_THEN_STALL]) as server,
        DeepSeekAdapter(KEY, server.base_url, drain_timeout=0.3, read_timeout=0.05) as adapter,
    ):
        chunks = await collect(adapter.stream(options()))
        assert kinds(chunks) == ["block-start", "text-delta", "block-end", "finish"]
        await server.wait_for_connections(0)
