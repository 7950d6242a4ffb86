"""The scripted chat-completions wire server (``dsh.testing.wire``), over real sockets."""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import struct
from typing import Any

import httpx
import pytest

from dsh.testing.wire import (
    CREATED,
    WIRE_MODEL,
    Entry,
    Finish,
    HttpError,
    NoBody,
    Raw,
    RawBytes,
    RawResponse,
    ReasoningDelta,
    RecordedRequest,
    Reply,
    SentAt,
    Silence,
    TextDelta,
    ToolCallDelta,
    Usage,
    WireServer,
    api_error,
    long_reply,
    sent_at_stamps,
    text_reply,
    tool_call,
)

BODY = {"model": "m", "messages": [], "stream": True}


def events(body: bytes) -> list[Any]:
    """The SSE payloads of a body, JSON-decoded where they are JSON."""
    payloads = [block.removeprefix("data: ") for block in body.decode().split("\n\n") if block]
    return [payload if payload == "[DONE]" else json.loads(payload) for payload in payloads]


async def post(client: httpx.AsyncClient, server: WireServer, **kwargs: Any) -> httpx.Response:
    return await client.post(f"{server.base_url}/chat/completions", json=kwargs.pop("json", BODY), **kwargs)


async def raw(server: WireServer, data: bytes) -> bytes:
    """Send ``data`` on a fresh connection, half-close, and read everything until the server closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(data)
    await writer.drain()
    writer.write_eof()
    answer = await reader.read()
    writer.close()
    await writer.wait_closed()
    return answer


async def test_answers_entries_in_order_and_records_every_request() -> None:
    """entries are answered in order; method, path, headers and the parsed JSON body are recorded"""
    script = [text_reply("one", usage=Usage(3, 1)), text_reply("two")]
    async with WireServer(script) as server, httpx.AsyncClient() as client:
        first = await post(client, server, headers={"authorization": "Bearer k", "x-two": "a"})
        second = await post(client, server, json={"model": "n"})
        assert first.status_code == 200
        assert first.headers["content-type"].startswith("text/event-stream")
        assert events(first.content) == [
            {
                "id": "wire-chunk",
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": WIRE_MODEL,
                "system_fingerprint": "fp_wire",
                "choices": [{"index": 0, "delta": {"content": "one"}, "logprobs": None, "finish_reason": None}],
            },
            {
                "id": "wire-chunk",
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": WIRE_MODEL,
                "system_fingerprint": "fp_wire",
                "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
            },
            "[DONE]",
        ]
        assert events(second.content)[0]["choices"][0]["delta"] == {"content": "two"}
        assert [r.json for r in server.requests] == [BODY, {"model": "n"}]
        request = server.requests[0]
        assert (request.method, request.path, request.version) == ("POST", "/chat/completions", "HTTP/1.1")
        assert request.headers["authorization"] == "Bearer k"
        assert request.headers["content-type"] == "application/json"
        assert json.loads(request.body) == BODY
        assert server.total_connections == 1  # keep-alive: both requests on one connection


async def test_builds_every_event_shape() -> None:
    """reasoning, tool-call fragments, finish reasons, attached and trailing usage, raw events"""
    reply = Reply(
        [
            ReasoningDelta(""),
            ReasoningDelta("hmm"),
            *tool_call(0, "call_1", "weather", '{"city":"Paris"}', pieces=3),
            ToolCallDelta(1, None),
            Finish("tool_calls", Usage(10, 4, cached_tokens=6, reasoning_tokens=2)),
            Usage(10, 4),
            Raw("{broken"),
            RawBytes(b": comment\n\n"),
            RawBytes(b""),
        ]
    )
    async with WireServer([reply]) as server, httpx.AsyncClient() as client:
        body = (await post(client, server)).content
    decoded = body.decode()
    assert ": comment\n\n" in decoded
    assert "data: {broken\n\n" in decoded
    parsed = events(body.replace(b"data: {broken\n\n", b"").replace(b": comment\n\n", b""))
    deltas = [p["choices"][0]["delta"] for p in parsed[:-1] if p["choices"]]
    assert deltas[0] == {"content": None, "reasoning_content": ""}
    assert deltas[1] == {"content": None, "reasoning_content": "hmm"}
    assert deltas[2] == {
        "tool_calls": [
            {
                "index": 0,
                "id": "call_1",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city'},
            }
        ]
    }
    assert [d["tool_calls"][0]["function"] for d in deltas[3:5]] == [
        {"arguments": '":"Par'},
        {"arguments": 'is"}'},
    ]
    assert deltas[5] == {"tool_calls": [{"index": 1, "function": {}}]}
    finish = parsed[6]
    assert finish["choices"][0]["finish_reason"] == "tool_calls"
    assert finish["usage"] == {
        "prompt_tokens": 10,
        "completion_tokens": 4,
        "total_tokens": 14,
        "prompt_tokens_details": {"cached_tokens": 6},
        "prompt_cache_hit_tokens": 6,
        "prompt_cache_miss_tokens": 4,
        "completion_tokens_details": {"reasoning_tokens": 2},
    }
    assert parsed[7]["choices"] == []
    assert parsed[7]["usage"] == {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14}
    assert parsed[-1] == "[DONE]"


def test_reply_helpers() -> None:
    """text_reply opens thinking with the empty chunk; tool_call splits arguments; long_reply renders once"""
    thinking = text_reply("a", reasoning=["r1", "r2"], finish="length")
    assert thinking.events == (
        ReasoningDelta(""),
        ReasoningDelta("r1"),
        ReasoningDelta("r2"),
        TextDelta("a"),
        Finish("length"),
    )
    assert tool_call(2, "c", "f", "") == [ToolCallDelta(2, "", "c", "f")]
    assert tool_call(0, "c", "f", "abc", pieces=0) == [ToolCallDelta(0, "abc", "c", "f")]
    assert [d.arguments for d in tool_call(0, "c", "f", "abcdefg", pieces=3)] == ["abc", "def", "g"]
    reply = long_reply(1000, "tok")
    assert len(reply.events) == 1001
    assert reply.events[-1] == Finish("stop", Usage(1, 1000))
    assert reply.body is reply.body  # rendered once
    assert long_reply(2, usage=Usage(5, 5)).events[-1] == Finish("stop", Usage(5, 5))
    assert api_error(401, "bad key").body == {
        "error": {"message": "bad key", "type": "invalid_request_error", "param": None, "code": None}
    }


async def test_serves_a_long_reply_instantly_and_repeats_the_script() -> None:
    """repeat=True serves the script over and over; a long reply arrives whole"""
    async with (
        WireServer([long_reply(500), text_reply("b")], repeat=True) as server,
        httpx.AsyncClient() as client,
    ):
        bodies = [(await post(client, server)).content for _ in range(5)]
    assert [len(events(body)) for body in bodies] == [502, 3, 502, 3, 502]


async def test_answers_http_errors_with_json_text_or_bytes_bodies() -> None:
    """HttpError sends its status and body; content types follow the body kind"""
    script = [
        api_error(429, "slow down"),
        HttpError(502, "<html>bad gateway</html>", "text/html"),
        HttpError(500, b"\xff raw"),
        HttpError(599, "odd"),
    ]
    async with WireServer(script) as server, httpx.AsyncClient() as client:
        answers = [await post(client, server) for _ in script]
    assert answers[0].status_code == 429
    assert answers[0].headers["content-type"] == "application/json"
    assert answers[0].json()["error"]["message"] == "slow down"
    assert (answers[1].status_code, answers[1].text) == (502, "<html>bad gateway</html>")
    assert answers[1].headers["content-type"] == "text/html"
    assert answers[2].content == b"\xff raw"
    assert answers[2].headers["content-type"] == "text/plain; charset=utf-8"
    assert (answers[3].status_code, answers[3].reason_phrase) == (599, "Unknown")


async def test_answers_no_body_silence_and_raw_responses() -> None:
    """NoBody has content-length 0; Silence waits for the client; RawResponse is sent verbatim and closes"""
    script: list[Entry] = [NoBody(204), Silence(), RawResponse(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi")]
    async with WireServer(script) as server, httpx.AsyncClient() as client:
        empty = await post(client, server)
        assert (empty.status_code, empty.content) == (204, b"")
        given_up = asyncio.ensure_future(post(client, server))
        await server.wait_for_requests(2)
        given_up.cancel()  # the client gives up waiting
        with pytest.raises(asyncio.CancelledError):
            await given_up
        await server.wait_for_connections(0)  # ... and the server lets the connection go
        raw_answer = await post(client, server)
        assert (raw_answer.status_code, raw_answer.text) == (200, "hi")
        await server.wait_for_connections(0)  # a raw response always closes the connection


async def test_endings_and_framings() -> None:
    """done/end keep the connection; cut breaks the chunked body; close framing ends at EOF"""
    script = [
        Reply([TextDelta("a")], ending="end"),
        Reply([TextDelta("b")], ending="cut"),
        Reply([TextDelta("c")], framing="close"),
        Reply([TextDelta("d")], ending="cut", framing="close"),
    ]
    async with WireServer(script) as server, httpx.AsyncClient() as client:
        ended = await post(client, server)
        assert events(ended.content)[-1] != "[DONE]"
        assert server.total_connections == 1
        with pytest.raises(httpx.RemoteProtocolError):
            await post(client, server)
        closed = await post(client, server)
        assert "transfer-encoding" not in closed.headers
        assert closed.headers["connection"] == "close"
        assert events(closed.content)[-1] == "[DONE]"
        cut = await post(client, server)
        assert events(cut.content)[-1] != "[DONE]"
    assert server.total_connections == 3  # the first two on one connection, then one each


async def test_a_stall_holds_until_the_client_leaves_and_close_ends_stalled_connections() -> None:
    """a stalled reply sends its events, then waits; closing the server ends it"""
    server = WireServer([Reply([TextDelta("partial")], ending="stall")])
    await server.start()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    body = json.dumps(BODY).encode()
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head
    size = int((await reader.readuntil(b"\r\n")).strip(), 16)
    assert b"partial" in await reader.readexactly(size)
    await server.wait_for_connections(1)
    await server.close()
    await server.close()  # idempotent
    assert server.open_connections == 0
    assert await reader.read() == b"\r\n"  # the rest of the chunk, then EOF
    writer.close()
    await writer.wait_closed()


async def test_a_client_reset_during_a_stall_never_crashes_the_server() -> None:
    """a connection reset mid-answer ends that connection only"""
    async with WireServer([Reply([TextDelta("x")], ending="stall"), text_reply("after")]) as server:
        sock = socket.create_connection(("127.0.0.1", server.port))
        sock.setblocking(False)
        loop = asyncio.get_running_loop()
        body = json.dumps(BODY).encode()
        await loop.sock_sendall(
            sock, b"POST /chat/completions HTTP/1.1\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
        )
        assert (await loop.sock_recv(sock, 65536)).startswith(b"HTTP/1.1 200 OK")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # RST, not FIN
        await server.wait_for_connections(0)
        async with httpx.AsyncClient() as client:
            assert events((await post(client, server)).content)[0]["choices"][0]["delta"] == {"content": "after"}


async def test_exhausted_scripts_unknown_routes_and_late_additions() -> None:
    """an exhausted script answers 500 with a message; other routes 404; add() extends the script"""
    async with WireServer() as server, httpx.AsyncClient() as client:
        exhausted = await post(client, server)
        assert exhausted.status_code == 500
        message = exhausted.json()["error"]["message"]
        assert "script exhausted: request #1 but the script has 0 entries" in message
        assert "add entries" in message
        missing = await client.get(f"{server.base_url}/models")
        assert missing.status_code == 404
        assert "no route for GET /models" in missing.json()["error"]["message"]
        server.add(text_reply("late"))
        assert (await post(client, server)).status_code == 200
        assert len(server.requests) == 3
    empty_repeat = WireServer(repeat=True)
    async with empty_repeat, httpx.AsyncClient() as client:
        assert (await post(client, empty_repeat)).status_code == 500


async def test_reads_chunked_requests_and_honors_connection_close_and_http_1_0() -> None:
    """chunked request bodies are decoded; connection: close and HTTP/1.0 end the connection"""
    async with WireServer([text_reply("a"), text_reply("b"), NoBody()]) as server:
        chunked = (
            b"POST /chat/completions HTTP/1.1\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
            b'4;ext=1\r\n{"a"\r\n3\r\n:1}\r\n0\r\nx-trailer: t\r\n\r\n'
        )
        answer = await raw(server, chunked)
        assert answer.startswith(b"HTTP/1.1 200 OK")
        assert answer.endswith(b"0\r\n\r\n")
        assert server.requests[0].json == {"a": 1}
        assert server.requests[0].keep_alive is False
        old = await raw(server, b"POST /chat/completions HTTP/1.0\r\nx-a: 1\r\nx-a: 2\r\n\r\n")
        assert old.startswith(b"HTTP/1.1 200 OK")
        assert server.requests[1].version == "HTTP/1.0"
        assert server.requests[1].headers["x-a"] == "1, 2"
        assert server.requests[1].json is None
        no_body = await raw(server, b"POST /chat/completions HTTP/1.1\r\nconnection: close\r\n\r\n")
        assert b"content-length: 0" in no_body
        assert b"connection: close" in no_body
    assert server.open_connections == 0


@pytest.mark.parametrize(
    ("request_bytes", "complaint"),
    [
        (b"GARBAGE\r\n\r\n", b"bad request line"),
        (b"POST /chat/completions SPDY/3\r\n\r\n", b"bad request line"),
        (b"POST /chat/completions HTTP/1.1\r\nno-colon\r\n\r\n", b"bad header line"),
        (b"POST /chat/completions HTTP/1.1\r\ncontent-length: ten\r\n\r\n", b"bad content-length"),
        (b"POST /chat/completions HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", b"bad chunk size"),
        (
            b"POST /chat/completions HTTP/1.1\r\nx-big: " + b"a" * 70_000 + b"\r\n\r\n",
            b"request head too large",
        ),
        (
            b"POST /chat/completions HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n" + b"1" * 70_000,
            b"chunk size line too long",
        ),
    ],
)
async def test_malformed_requests_get_a_400_that_names_the_problem(request_bytes: bytes, complaint: bytes) -> None:
    """a request the server cannot read is answered 400 with the reason, then the connection closes"""
    async with WireServer([text_reply("unused")]) as server:
        answer = await raw(server, request_bytes)
        assert answer.startswith(b"HTTP/1.1 400 Bad Request")
        assert complaint in answer
        await server.wait_for_connections(0)
        async with httpx.AsyncClient() as client:
            assert (await post(client, server)).status_code == 200  # the entry was not consumed


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"",
        b"POST /chat/completions HTTP/1.1\r\ncontent-le",
        b"POST /chat/completions HTTP/1.1\r\ncontent-length: 10\r\n\r\n{}",
        b"POST /chat/completions HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n4\r\n{}",
    ],
)
async def test_a_client_that_leaves_mid_request_never_crashes_the_server(request_bytes: bytes) -> None:
    """EOF before, inside or after the request head only ends that connection"""
    async with WireServer([text_reply("ok")]) as server:
        assert await raw(server, request_bytes) == b""
        await server.wait_for_connections(0)
        assert server.requests == []
        async with httpx.AsyncClient() as client:
            assert (await post(client, server)).status_code == 200


async def test_waiting_for_requests_and_connections_needs_no_sleep() -> None:
    """wait_for_requests / wait_for_connections return at once when already true, else on the change"""
    async with WireServer([Silence()]) as server:
        await server.wait_for_connections(0)
        await server.wait_for_requests(0)
        waiting = asyncio.ensure_future(server.wait_for_requests(1))
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST /chat/completions HTTP/1.1\r\n\r\n")
        await writer.drain()
        await waiting
        assert server.open_connections == 1
        writer.write(b"ignored while silent")
        await writer.drain()
        writer.close()
        await writer.wait_closed()
        await server.wait_for_connections(0)
        assert await reader.read() == b""  # nothing was ever answered


async def test_lifecycle_errors_name_the_fix() -> None:
    """using the server before start, or starting it twice, fails with a clear message"""
    server = WireServer()
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.base_url
    await server.close()  # closing a server that never started is harmless
    async with server:
        with pytest.raises(RuntimeError, match="already started"):
            await server.start()


async def test_respond_answers_each_request_from_its_conversation() -> None:
    """a respond callable replaces the script: each answer is chosen from the request it answers"""

    def respond(request: RecordedRequest) -> Entry:
        return text_reply(f"you said {request.json['messages'][-1]['content']}")

    async with WireServer(respond=respond) as server, httpx.AsyncClient() as client:
        answers = [
            events((await post(client, server, json={"messages": [{"content": word}]})).content) for word in ("a", "b")
        ]
    assert [answer[0]["choices"][0]["delta"]["content"] for answer in answers] == ["you said a", "you said b"]


@pytest.mark.parametrize("framing", ["chunked", "close"])
async def test_pace_spaces_the_events_and_sent_at_stamps_each_one(framing: str) -> None:
    """with pace, events leave one per interval; SentAt holds the clock at sending, read back by sent_at_stamps"""
    reply = Reply([SentAt(), SentAt(), SentAt(), Finish()], framing=framing)  # type: ignore[arg-type]
    async with WireServer([reply, reply], pace=0.02) as server, httpx.AsyncClient() as client:
        bodies = [(await post(client, server)).content for _ in range(2)]
    for body in bodies:
        text = "".join(event["choices"][0]["delta"].get("content", "") for event in events(body)[:-1])
        stamps = sent_at_stamps(text)
        assert len(stamps) == 3
        gaps = [later - earlier for earlier, later in itertools.pairwise(stamps)]
        assert all(gap >= 15_000_000 for gap in gaps)  # 20 ms apart, less the clock's grain


def test_unpaced_sent_at_is_stamped_once_with_the_body() -> None:
    """an unpaced reply renders its stamps once: the cached body is reused as it is"""
    reply = Reply([SentAt()])
    assert reply.body == reply.body
    assert b"[DONE]" in reply.body
