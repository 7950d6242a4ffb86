"""The client against the chat-completions wire server: realistic SSE, one HTTP chunk per event."""

from __future__ import annotations

import json

import pytest

from dsh.adapters.http import HttpClient, ReadError, ReadTimeoutError, RemoteProtocolError
from dsh.testing.wire import NoBody, RawResponse, Reply, TextDelta, WireServer, api_error, long_reply, text_reply

HEADERS = {
    "authorization": "Bearer sk-test",
    "content-type": "application/json",
    "accept": "text/event-stream",
    "accept-encoding": "identity",
}
BODY = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}).encode()


def events(reply: Reply) -> bytes:
    """The reply's SSE text as the client should deliver it (de-chunked)."""
    return b"".join(event.sse() for event in reply.events) + (b"data: [DONE]\n\n" if reply.ending == "done" else b"")


async def test_sequential_streams_share_one_connection() -> None:
    """(extra) 20 chat streams: each body is the SSE text, all over one connection"""
    reply = text_reply("hello", "world")
    async with WireServer([reply], repeat=True) as server, HttpClient() as client:
        for _ in range(20):
            answer = await client.send("POST", f"{server.base_url}/chat/completions", HEADERS, BODY)
            assert answer.status == 200
            assert answer.headers.get("content-type") == "text/event-stream; charset=utf-8"
            assert await answer.read() == events(reply)
        assert server.total_connections == 1
        assert server.open_connections == 1
    assert server.requests[0].json == json.loads(BODY)
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"


async def test_a_long_stream_arrives_in_few_large_pieces() -> None:
    """(extra) thousands of one-event chunks are de-chunked in bulk: far fewer pieces than events"""
    reply = long_reply(5000)
    async with WireServer([reply]) as server, HttpClient() as client:
        answer = await client.send("POST", f"{server.base_url}/chat/completions", HEADERS, BODY)
        pieces = [piece async for piece in answer]
        assert b"".join(pieces) == events(reply)
        assert len(pieces) < 500


async def test_an_api_error_body_is_readable() -> None:
    """(extra) a non-2xx JSON answer: status and body as sent, connection kept"""
    async with WireServer([api_error(429, "slow down"), text_reply("ok")]) as server, HttpClient() as client:
        answer = await client.send("POST", f"{server.base_url}/chat/completions", HEADERS, BODY)
        assert answer.status == 429
        assert answer.reason == "Too Many Requests"
        assert json.loads(await answer.read())["error"]["message"] == "slow down"
        again = await client.send("POST", f"{server.base_url}/chat/completions", HEADERS, BODY)
        assert b"ok" in await again.read()
        assert server.total_connections == 1


async def test_an_empty_body() -> None:
    """(extra) a 200 with content-length: 0 ends at once"""
    async with WireServer([NoBody()]) as server, HttpClient() as client:
        answer = await client.send("POST", f"{server.base_url}/chat/completions", HEADERS, BODY)
        assert [piece async for piece in answer] == []


async def test_a_stream_cut_mid_body_is_a_read_error() -> None:
    """(extra) the wire's 'cut' ending drops the connection inside the chunked body"""
    async with WireServer([Reply([TextDelta("a")], ending="cut")]) as server, HttpClient() as client:
        answer = await client.send("POST", f"{server.base_url}/chat/completions", HEADERS, BODY)
        with pytest.raises(ReadError, match="chunked body"):
            await answer.read()


async def test_a_close_delimited_stream_reads_to_the_end() -> None:
    """(extra) framing='close': the body is everything until the server closes"""
    reply = Reply([TextDelta("a"), TextDelta("b")], framing="close")
    async with WireServer([reply]) as server, HttpClient() as client:
        answer = await client.send("POST", f"{server.base_url}/chat/completions", HEADERS, BODY)
        assert await answer.read() == events(reply)
        assert client.idle_count == 0


async def test_a_stalled_stream_hits_the_read_timeout() -> None:
    """(extra) the wire's 'stall' ending: events, then silence until the read timeout"""
    reply = Reply([TextDelta("a")], ending="stall")
    async with WireServer([reply]) as server, HttpClient(read_timeout=0.05) as client:
        answer = await client.send("POST", f"{server.base_url}/chat/completions", HEADERS, BODY)
        pieces = aiter(answer)
        assert await anext(pieces) == events(reply)
        with pytest.raises(ReadTimeoutError):
            await anext(pieces)
        await server.wait_for_connections(0)


async def test_garbage_instead_of_http() -> None:
    """(extra) the wire's RawResponse with no status line: RemoteProtocolError"""
    async with WireServer([RawResponse(b"hello there\r\n\r\n")]) as server, HttpClient() as client:
        with pytest.raises(RemoteProtocolError, match="invalid status line 'hello there'"):
            await client.send("POST", f"{server.base_url}/chat/completions", HEADERS, BODY)
