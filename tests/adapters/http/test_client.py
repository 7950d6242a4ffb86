"""The client against scripted servers on 127.0.0.1: framing, keep-alive, the pool, decoding, closing."""

from __future__ import annotations

import ast
import asyncio
import gzip
import subprocess
import sys
import zlib

import pytest

from dsh.adapters.http import (
    ClientClosedError,
    DecodingError,
    HttpClient,
    HttpResponse,
    InvalidRequestError,
    InvalidUrlError,
    ReadError,
)
from tests.adapters.http.helpers import (
    Exchange,
    HeadOnly,
    RawServer,
    chunked,
    response,
    then_close,
    then_stall,
    until,
    until_eof,
)


async def body_pieces(answer: HttpResponse) -> list[bytes]:
    return [piece async for piece in answer]


async def test_a_content_length_response() -> None:
    """content-length: status, reason, version, headers and body as sent; the request as expected"""
    async with (
        RawServer(response(201, b"created", [("X-Id", "7"), ("x-id", "8")], reason="Created")) as server,
        HttpClient() as client,
    ):
        answer = await client.send("POST", server.url("/items?x=1"), {"content-type": "text/plain"}, b"payload")
        assert (answer.status, answer.reason, answer.http_version) == (201, "Created", "HTTP/1.1")
        assert answer.headers.get("x-id") == "7, 8"
        assert answer.url == server.url("/items?x=1")
        assert repr(answer) == f"<HttpResponse 201 'Created' {server.url('/items?x=1')}>"
        assert await answer.read() == b"created"
        assert await answer.read() == b"created"  # the same bytes again
        await answer.aclose()
    request = server.requests[0]
    assert request.line == "POST /items?x=1 HTTP/1.1"
    assert request.headers == [
        ("Host", f"127.0.0.1:{server.port}"),
        ("content-type", "text/plain"),
        ("content-length", "7"),
    ]
    assert request.body == b"payload"


async def test_a_chunked_response_with_extensions_and_trailers_streams_piece_by_piece() -> None:
    """chunked with extensions and trailers: pieces de-chunked as they arrive, trailers dropped"""
    gate = asyncio.Event()

    async def answer(exchange: Exchange) -> bool:
        await exchange.send(response(200, b"5;ext=1\r\nfirst\r\n", [("transfer-encoding", "chunked")], length=False))
        await gate.wait()
        await exchange.send(b"6\r\nsecond\r\n0\r\nx-trailer: t\r\n\r\n")
        return True

    async with RawServer(answer) as server, HttpClient() as client:
        reply = await client.send("GET", server.url())
        pieces = aiter(reply)
        assert await anext(pieces) == b"first"
        gate.set()
        assert await anext(pieces) == b"second"
        with pytest.raises(StopAsyncIteration):
            await anext(pieces)
        with pytest.raises(StopAsyncIteration):
            await anext(pieces)
        assert client.idle_count == 1
        assert "x-trailer" not in reply.headers


async def test_a_close_delimited_response_reads_to_eof_and_is_not_reused() -> None:
    """close-delimited: the body ends when the server closes; that connection is not pooled"""
    async with (
        RawServer(then_close(response(200, b"until the end", length=False)), response(200, b"next")) as server,
        HttpClient() as client,
    ):
        first = await client.send("GET", server.url())
        assert await first.read() == b"until the end"
        assert client.idle_count == 0
        second = await client.send("GET", server.url())
        assert await second.read() == b"next"
        assert server.connections == 2


async def test_interim_responses_are_skipped() -> None:
    """1xx then 200: 100 Continue and 103 Early Hints are skipped, the final answer is returned"""
    data = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n" + response(200, b"final")
    async with RawServer(data) as server, HttpClient() as client:
        answer = await client.send("POST", server.url(), {}, b"x")
        assert answer.status == 200
        assert await answer.read() == b"final"


@pytest.mark.parametrize(
    ("method", "status"),
    [("HEAD", 200), ("GET", 204), ("GET", 304)],
)
async def test_responses_without_body_free_the_connection_at_once(method: str, status: int) -> None:
    """HEAD/204/304: no body is read (despite content-length) and the connection is pooled at once"""
    head = f"HTTP/1.1 {status} X\r\ncontent-length: 1234\r\n\r\n".encode()
    async with RawServer(head, response(200, b"then")) as server, HttpClient() as client:
        answer = await client.send(method, server.url())
        assert answer.status == status
        assert client.idle_count == 1  # before any read or close
        assert await answer.read() == b""
        again = await client.send("GET", server.url())
        assert await again.read() == b"then"
        assert server.connections == 1
        assert server.requests[0].line.startswith(f"{method} /")


async def test_keep_alive_reuses_one_connection() -> None:
    """keep-alive reuse proven by counting server-side connections"""
    async with RawServer(*(response(200, f"answer {n}".encode()) for n in range(20))) as server:
        async with HttpClient() as client:
            for n in range(20):
                answer = await client.send("GET", server.url(f"/{n}"))
                assert await answer.read() == f"answer {n}".encode()
                await answer.aclose()
            assert client.idle_count == 1
        await server.wait_disconnects(1)
    assert server.connections == 1
    assert [request.connection for request in server.requests] == [1] * 20


@pytest.mark.parametrize(
    "first",
    [
        response(200, b"a", [("connection", "close")]),
        response(200, b"a", version="HTTP/1.0"),
    ],
    ids=["connection-close", "http-1.0"],
)
async def test_connection_close_or_http_1_0_is_not_reused(first: bytes) -> None:
    """connection: close / HTTP/1.0: the connection is closed after the response"""
    async with RawServer(first, response(200, b"b")) as server, HttpClient() as client:
        assert await (await client.send("GET", server.url())).read() == b"a"
        assert client.idle_count == 0
        await server.wait_disconnects(1)
        assert await (await client.send("GET", server.url())).read() == b"b"
        assert server.connections == 2


async def test_http_1_0_keep_alive_is_reused() -> None:
    """HTTP/1.0: kept only when the server says connection: keep-alive"""
    first = response(200, b"a", [("Connection", "keep-alive")], version="HTTP/1.0")
    async with RawServer(first, response(200, b"b")) as server, HttpClient() as client:
        assert await (await client.send("GET", server.url())).read() == b"a"
        assert await (await client.send("GET", server.url())).read() == b"b"
        assert server.connections == 1


async def test_a_request_saying_connection_close_is_not_reused() -> None:
    """connection: close from the client side: the connection is closed after the response"""
    async with RawServer(response(200, b"a"), response(200, b"b")) as server, HttpClient() as client:
        first = await client.send("GET", server.url(), {"Connection": "Keep-Alive, Close"})
        assert await first.read() == b"a"
        assert client.idle_count == 0
        await server.wait_disconnects(1)
        assert await (await client.send("GET", server.url(), {"connection": "keep-alive"})).read() == b"b"
        assert client.idle_count == 1


async def test_a_pooled_connection_closed_by_the_server_is_discarded() -> None:
    """a pooled connection closed by the server while idle (EOF seen) is discarded, not reused"""
    async with RawServer(then_close(response(200, b"a")), response(200, b"b")) as server, HttpClient() as client:
        assert await (await client.send("GET", server.url())).read() == b"a"
        await server.wait_disconnects(1)
        await until(lambda: client.idle_count == 0)
        assert await (await client.send("GET", server.url())).read() == b"b"
    assert [request.connection for request in server.requests] == [1, 2]


async def test_unasked_bytes_on_an_idle_connection_discard_it() -> None:
    """(extra) a server talking on an idle connection makes it unusable"""
    idle = asyncio.Event()

    async def chatty(exchange: Exchange) -> bool:
        await exchange.send(response(200, b"a"))
        await idle.wait()
        await exchange.send(b"HTTP/1.1 200 OK\r\n\r\nunasked")
        await until_eof(exchange.reader)
        return False

    async with RawServer(chatty, response(200, b"b")) as server, HttpClient() as client:
        first = await client.send("GET", server.url())
        assert await first.read() == b"a"
        assert client.idle_count == 1
        idle.set()
        await until(lambda: client.idle_count == 0)
        assert await (await client.send("GET", server.url())).read() == b"b"
        assert server.connections == 2


async def test_bytes_after_the_response_make_the_connection_unreusable() -> None:
    """(extra) extra bytes in the same read as the response: the connection is closed, not pooled"""
    async with RawServer(response(200, b"a") + b"junk", response(200, b"b")) as server, HttpClient() as client:
        answer = await client.send("GET", server.url())
        assert await answer.read() == b"a"
        assert client.idle_count == 0


async def test_the_idle_pool_is_bounded_per_origin() -> None:
    """(extra) max_idle_per_origin idle connections are kept, the oldest beyond are closed"""
    gate = asyncio.Event()

    async def held(exchange: Exchange) -> bool:
        await exchange.send(response(200, b"", [("content-length", "1")], length=False))
        await gate.wait()
        await exchange.send(b"x")
        return True

    async with RawServer(held, held, held) as server:
        async with HttpClient(max_idle_per_origin=2) as client:
            answers = [await client.send("GET", server.url()) for _ in range(3)]  # three connections at once
            assert server.connections == 3
            gate.set()
            for answer in answers:
                assert await answer.read() == b"x"
            assert client.idle_count == 2
            assert repr(client) == "<HttpClient open idle=2>"
            await server.wait_disconnects(1)
        assert repr(client) == "<HttpClient closed idle=0>"
        await server.wait_disconnects(3)


async def test_origins_do_not_share_connections() -> None:
    """(extra) a connection serves one (scheme, host, port): another port opens its own"""
    async with (
        RawServer(response(200, b"one")) as one,
        RawServer(response(200, b"two")) as two,
        HttpClient() as client,
    ):
        assert await (await client.send("GET", one.url())).read() == b"one"
        assert await (await client.send("GET", two.url())).read() == b"two"
        assert (one.connections, two.connections, client.idle_count) == (1, 1, 2)


async def test_a_large_body_is_sent_whole_and_streamed_back() -> None:
    """(extra) a 16 MiB upload goes through the write flow control; a 4 MiB answer streams back"""
    upload = bytes(range(256)) * (1 << 16)
    download = b"z" * (4 << 20)
    async with (
        RawServer(response(200, download)) as server,
        HttpClient(write_timeout=30.0, read_timeout=20.0) as client,
    ):
        answer = await client.send("PUT", server.url(), {}, upload)
        total = 0
        async for piece in answer:
            total += len(piece)
        assert total == len(download)
        assert client.idle_count == 1
    assert server.requests[0].body == upload


async def test_a_slow_reader_pauses_the_socket_and_loses_nothing() -> None:
    """(extra) when the consumer lags by more than the high-water mark, reading pauses, then resumes"""
    download = bytes(range(256)) * (12 << 12)  # 12 MiB

    async def answer(exchange: Exchange) -> bool:
        await exchange.send(response(200, download))
        return True

    async with RawServer(answer) as server, HttpClient() as client:
        reply = await client.send("GET", server.url())
        await server.wait_requests(1)
        pieces = []
        async for piece in reply:
            pieces.append(piece)
            await asyncio.sleep(0)  # let the socket fill up while this consumer is slow
        assert b"".join(pieces) == download


async def test_an_early_answer_stops_the_upload_and_ends_the_connection() -> None:
    """(extra) a server answering before it read the request body: the answer is returned, the connection dropped"""

    async def early(exchange: Exchange) -> bool:
        await exchange.send(response(413, b"too large", [("connection", "close")], reason="Too Large"))
        await until_eof(exchange.reader)
        return False

    async with RawServer(HeadOnly(early)) as server, HttpClient() as client:
        answer = await client.send("POST", server.url(), {}, b"x" * (32 << 20))
        assert answer.status == 413
        assert await answer.read() == b"too large"
        assert client.idle_count == 0


@pytest.mark.parametrize(
    ("encoding", "data"),
    [("gzip", gzip.compress(b"hello " * 1000, mtime=0)), ("deflate", zlib.compress(b"hello " * 1000))],
    ids=["gzip", "deflate"],
)
async def test_gzip_and_deflate_bodies_are_decoded(encoding: str, data: bytes) -> None:
    """gzip and deflate bodies: decoded with zlib, the connection reused afterwards"""
    framed = response(
        200,
        chunked(data[:10], data[10:]),
        [("content-encoding", encoding), ("transfer-encoding", "chunked")],
        length=False,
    )
    async with RawServer(framed, response(200, b"plain")) as server, HttpClient() as client:
        answer = await client.send("GET", server.url(), {"accept-encoding": "gzip, deflate"})
        assert await answer.read() == b"hello " * 1000
        assert await (await client.send("GET", server.url())).read() == b"plain"
        assert server.connections == 1


async def test_an_unknown_encoding_is_a_decoding_error_naming_it() -> None:
    """unknown encoding: DecodingError naming it; the body is unreadable after (the exchange itself completed)"""
    async with RawServer(response(200, b"\x8b\x00", [("content-encoding", "br")])) as server, HttpClient() as client:
        answer = await client.send("GET", server.url())
        assert answer.headers.get("content-encoding") == "br"
        with pytest.raises(DecodingError, match="'br'"):
            await answer.read()
        with pytest.raises(ReadError, match="closed before its body was read"):
            await answer.read()
        assert client.idle_count == 1  # the whole response had arrived: the connection is fine


async def test_a_corrupt_encoded_body_closes_the_connection() -> None:
    """(extra) a corrupt gzip body raises while the connection still streams: it is closed, not pooled"""
    framed = response(
        200, b"\x1f\x8b\x08\x00" + b"\xff" * 40, [("content-encoding", "gzip"), ("content-length", "999")], length=False
    )
    async with RawServer(then_stall(framed)) as server, HttpClient() as client:
        answer = await client.send("GET", server.url())
        with pytest.raises(DecodingError, match="corrupt"):
            await answer.read()
        await server.wait_disconnects(1)


async def test_a_truncated_encoded_body_fails_at_its_end() -> None:
    """(extra) gzip data cut short inside a complete HTTP body: DecodingError once the body ended"""
    data = gzip.compress(b"x" * 5000, mtime=0)[:-8]
    async with RawServer(response(200, data, [("content-encoding", "gzip")])) as server, HttpClient() as client:
        answer = await client.send("GET", server.url())
        pieces = aiter(answer)
        assert await anext(pieces) == b"x" * 5000
        with pytest.raises(DecodingError, match="truncated"):
            await anext(pieces)
        with pytest.raises(ReadError):
            await anext(pieces)
        assert client.idle_count == 1  # the HTTP exchange itself was complete


async def test_closing_before_the_end_closes_the_connection() -> None:
    """(extra) aclose() with the body still coming: the connection is closed; reading after raises"""
    async with (
        RawServer(then_stall(response(200, b"part", [("content-length", "100")], length=False))) as server,
        HttpClient() as client,
    ):
        answer = await client.send("GET", server.url())
        await answer.aclose()
        await answer.aclose()  # idempotent
        with pytest.raises(ReadError, match="closed before its body was read"):
            await answer.read()
        assert client.idle_count == 0
        await server.wait_disconnects(1)


async def test_closing_once_the_rest_arrived_unread_pools_the_connection() -> None:
    """(extra) the end of the body arrived after the last read; aclose() then pools the connection"""
    gate = asyncio.Event()
    sent = asyncio.Event()

    async def split(exchange: Exchange) -> bool:
        await exchange.send(response(200, b"data: [DONE]\n\n", [("content-length", "18")], length=False))
        await gate.wait()
        await exchange.send(b"tail")
        sent.set()
        return True

    async with RawServer(split, response(200, b"next")) as server, HttpClient() as client:
        answer = await client.send("GET", server.url())
        assert await anext(aiter(answer)) == b"data: [DONE]\n\n"
        gate.set()
        await sent.wait()
        for _ in range(20):  # a few loop passes: the tail reaches the client's protocol
            await asyncio.sleep(0)
        await answer.aclose()
        assert client.idle_count == 1
        assert await (await client.send("GET", server.url())).read() == b"next"
        assert server.connections == 1


async def test_closing_after_the_body_arrived_pools_the_connection() -> None:
    """(extra) aclose() once the whole body arrived, read or not: the connection goes back to the pool"""
    async with RawServer(response(200, b"unread"), response(200, b"b")) as server, HttpClient() as client:
        async with await client.send("GET", server.url()) as answer:
            assert answer.status == 200
        assert client.idle_count == 1
        assert await (await client.send("GET", server.url())).read() == b"b"
        assert server.connections == 1


async def test_a_body_that_arrived_with_the_head_is_kept_after_the_connection_left() -> None:
    """(extra) the connection is pooled as soon as the body arrived; the pieces stay readable"""
    async with RawServer(response(200, b"hello")) as server, HttpClient() as client:
        answer = await client.send("GET", server.url())
        assert client.idle_count == 1
        assert await body_pieces(answer) == [b"hello"]
        assert await body_pieces(answer) == []


async def test_the_closed_client_refuses_new_requests() -> None:
    """client close: idle connections are closed, new sends raise ClientClosedError"""
    async with RawServer(
        response(200, b"a"), then_stall(response(200, b"b", [("content-length", "9")], length=False))
    ) as server:
        client = HttpClient()
        was_closed = client.closed
        assert not was_closed
        assert await (await client.send("GET", server.url())).read() == b"a"
        busy = await client.send("GET", server.url())
        await client.aclose()
        await client.aclose()  # idempotent
        assert client.closed
        assert client.idle_count == 0
        with pytest.raises(ClientClosedError, match="create a new one") as caught:
            await client.send("GET", server.url())
        assert caught.value.url == server.url()
        await busy.aclose()  # a response still open when the client closed: its connection is closed too
        await server.wait_disconnects(1)


async def test_a_finished_response_after_client_close_closes_its_connection() -> None:
    """(extra) a response completing after aclose() does not repopulate the pool"""
    gate = asyncio.Event()

    async def late(exchange: Exchange) -> bool:
        await exchange.send(response(200, b"", [("content-length", "4")], length=False))
        await gate.wait()
        await exchange.send(b"late")
        return True

    async with RawServer(late) as server:
        client = HttpClient()
        answer = await client.send("GET", server.url())
        await client.aclose()
        gate.set()
        assert await answer.read() == b"late"
        assert client.idle_count == 0
        await server.wait_disconnects(1)


async def test_invalid_input_fails_before_any_io() -> None:
    """(extra) a bad URL or header injection raises before a connection is opened"""
    async with RawServer() as server, HttpClient() as client:
        with pytest.raises(InvalidUrlError):
            await client.send("GET", "ftp://127.0.0.1/")
        with pytest.raises(InvalidRequestError):
            await client.send("GET", server.url(), {"x": "a\r\nb: c"})
        assert server.connections == 0


async def test_urls_are_parsed_once_then_cached() -> None:
    """(extra) the per-client URL cache is bounded and stays correct past its size"""
    async with RawServer(*(response(200, str(n).encode()) for n in range(70))) as server, HttpClient() as client:
        for n in range(70):
            assert await (await client.send("GET", server.url(f"/{n}"))).read() == str(n).encode()
        assert server.connections == 1


async def test_header_pairs_given_as_lists_are_sent_uncached() -> None:
    """(extra) pairs that are lists (unhashable) skip the head cache and go out the same"""
    async with RawServer(response(200, b"a"), response(200, b"b")) as server, HttpClient() as client:
        for expected in (b"a", b"b"):
            pairs: list[tuple[str, str]] = [["x-list", "1"]]  # type: ignore[list-item]
            assert await (await client.send("GET", server.url(), pairs)).read() == expected
    assert [request.header("x-list") for request in server.requests] == ["1", "1"]


def test_importing_the_package_stays_cheap() -> None:
    """(extra) import dsh.adapters.http pulls in no urllib.request, email, http.client, zlib or certifi"""
    script = (
        "import sys, asyncio; before = set(sys.modules); import dsh.adapters.http; "
        "print(sorted(set(sys.modules) - before))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded = set(ast.literal_eval(result.stdout))
    assert not loaded & {"urllib.request", "urllib.parse", "email", "http.client", "zlib", "certifi", "ipaddress"}
    assert {name for name in loaded if not name.startswith("dsh")} <= {"__future__"}
