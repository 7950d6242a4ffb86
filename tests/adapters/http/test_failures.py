"""Failures over real connections: truncation, resets, broken HTTP, refused connections, the retry rule."""

from __future__ import annotations

import socket

import pytest

from dsh.adapters.http import (
    ConnectError,
    HttpClient,
    HttpError,
    ReadError,
    ReadTimeoutError,
    RemoteProtocolError,
    WriteError,
)
from tests.adapters.http.helpers import (
    Exchange,
    HeadOnly,
    RawServer,
    drop,
    reset,
    response,
    silence,
    then_close,
    until,
    until_eof,
)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (response(200, b"short", [("content-length", "100")], length=False), "95 bytes of the body still to come"),
        (response(200, b"5\r\nabc", [("transfer-encoding", "chunked")], length=False), "middle of the chunked body"),
        (response(200, b"5\r\nabcde\r\n", [("transfer-encoding", "chunked")], length=False), "middle of the chunked"),
    ],
    ids=["content-length", "mid-chunk", "no-last-chunk"],
)
async def test_a_truncated_body_is_a_read_error(data: bytes, match: str) -> None:
    """truncated bodies: EOF mid-chunk or before content-length raises ReadError while iterating"""
    async with RawServer(then_close(data)) as server, HttpClient() as client:
        answer = await client.send("GET", server.url())
        assert answer.status == 200
        with pytest.raises(ReadError, match=match) as caught:
            await answer.read()
        assert caught.value.url == server.url()
        with pytest.raises(ReadError, match="closed before its body was read"):
            await answer.read()
        assert client.idle_count == 0


async def test_eof_in_the_middle_of_the_head_is_a_read_error() -> None:
    """(extra) a server that stops mid-head: ReadError from send"""
    async with RawServer(then_close(b"HTTP/1.1 200 OK\r\ncontent-le")) as server, HttpClient() as client:
        with pytest.raises(ReadError, match="middle of the response head"):
            await client.send("GET", server.url())


async def test_a_reset_is_a_read_error_caused_by_the_os_error() -> None:
    """a reset: ReadError with the OS error as __cause__ (mid-body)"""
    partial = response(200, b"part", [("content-length", "100")], length=False)
    async with RawServer(reset(partial)) as server, HttpClient() as client:
        answer = await client.send("GET", server.url())
        with pytest.raises(ReadError, match="was lost") as caught:
            async for _ in answer:
                pass
        assert isinstance(caught.value.__cause__, ConnectionResetError)


async def test_a_reset_before_the_answer_on_a_fresh_connection_is_not_retried() -> None:
    """a reset (or EOF) before any byte on a fresh connection: ReadError, no retry"""
    async with RawServer(reset(), drop) as server, HttpClient() as client:
        with pytest.raises(ReadError) as caught:
            await client.send("POST", server.url(), {}, b"body")
        assert isinstance(caught.value.__cause__, ConnectionResetError)
        with pytest.raises(ReadError, match="without answering"):
            await client.send("POST", server.url(), {}, b"body")
        assert server.connections == 2
        assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "invalid status line"),
        (b"HTTP/1.1 200 OK\r\nx-big: " + b"a" * 70000 + b"\r\n\r\n", "larger than 65536"),
        (response(200, b"zz\r\nxx\r\n", [("transfer-encoding", "chunked")], length=False), "invalid chunk size"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\ncontent-length: 4\r\n\r\nabc", "conflicting content-length"),
    ],
    ids=["garbage-status-line", "oversize-headers", "bad-chunk-size", "conflicting-content-length"],
)
async def test_broken_http_is_a_remote_protocol_error(data: bytes, match: str) -> None:
    """garbage status line, oversize headers, bad chunk size, conflicting content-length: RemoteProtocolError"""

    async def answer(exchange: Exchange) -> bool:
        await exchange.send(data)
        await until_eof(exchange.reader)
        return False

    async with RawServer(answer) as server, HttpClient() as client:
        with pytest.raises(RemoteProtocolError, match=match) as caught:
            answer_ = await client.send("GET", server.url())
            await answer_.read()
        assert caught.value.url == server.url()
        assert client.idle_count == 0
        await server.wait_disconnects(1)  # the client closed the connection


async def test_a_refused_connection_is_a_connect_error() -> None:
    """(extra) nothing listening: ConnectError naming the address, the OS error as cause"""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, never listening: connections are refused
        async with HttpClient() as client:
            with pytest.raises(ConnectError, match=f"127.0.0.1:{port}") as caught:
                await client.send("GET", f"http://127.0.0.1:{port}/")
    assert isinstance(caught.value.__cause__, ConnectionRefusedError)
    assert caught.value.url == f"http://127.0.0.1:{port}/"


async def test_an_unresolvable_host_is_a_connect_error() -> None:
    """(extra) DNS failure: ConnectError naming the host"""
    async with HttpClient() as client:
        with pytest.raises(ConnectError, match=r"cannot resolve the host 'no-such-host\.invalid'") as caught:
            await client.send("GET", "http://no-such-host.invalid/")
    assert isinstance(caught.value.__cause__, socket.gaierror)


async def test_a_host_name_the_resolver_refuses_is_a_connect_error() -> None:
    """(extra) a label too long for IDNA: a ConnectError too, not a UnicodeError"""
    async with HttpClient() as client:
        with pytest.raises(ConnectError, match="cannot resolve"):
            await client.send("GET", f"http://{'a' * 64}.example/")


async def test_a_connection_lost_while_sending_is_a_write_error() -> None:
    """(extra) a reset while the request body is still going out: WriteError, the OS error as cause"""
    async with RawServer(HeadOnly(reset())) as server, HttpClient() as client:
        with pytest.raises(WriteError, match="was lost") as caught:
            await client.send("POST", server.url(), {}, b"x" * (48 << 20))
        assert isinstance(caught.value.__cause__, ConnectionError)


# --------------------------------------------------------------------- retry rule
async def test_a_stale_pooled_connection_is_retried_once_on_a_fresh_one() -> None:
    """retry-once-on-reused-connection: EOF before any byte on a reused connection → resent on a fresh one"""
    async with RawServer(response(200, b"first"), drop, response(200, b"second")) as server, HttpClient() as client:
        assert await (await client.send("POST", server.url(), {}, b"1")).read() == b"first"
        answer = await client.send("POST", server.url("/again"), {}, b"2")
        assert await answer.read() == b"second"
    assert [(r.line, r.body, r.connection) for r in server.requests] == [
        ("POST / HTTP/1.1", b"1", 1),
        ("POST /again HTTP/1.1", b"2", 1),
        ("POST /again HTTP/1.1", b"2", 2),
    ]


async def test_a_reset_on_a_reused_connection_is_retried_too() -> None:
    """(extra) a reset before any byte on a reused connection is retried like an EOF"""
    async with RawServer(response(200, b"a"), reset(), response(200, b"b")) as server, HttpClient() as client:
        await (await client.send("GET", server.url())).read()
        assert await (await client.send("GET", server.url())).read() == b"b"
        assert server.connections == 2


async def test_a_reused_connection_lost_while_sending_is_retried() -> None:
    """(extra) a reset while sending on a reused connection, before any answer: resent on a fresh one"""
    upload = b"u" * (48 << 20)
    async with RawServer(response(200, b"a"), HeadOnly(reset()), response(200, b"b")) as server, HttpClient() as client:
        await (await client.send("GET", server.url())).read()
        assert await (await client.send("POST", server.url(), {}, upload)).read() == b"b"
    assert server.requests[-1].body == upload
    assert [request.connection for request in server.requests] == [1, 1, 2]


async def test_the_retry_happens_only_once() -> None:
    """no retry: when the fresh connection fails too, the error is raised"""
    async with RawServer(response(200, b"a"), drop, drop, response(200, b"never")) as server, HttpClient() as client:
        await (await client.send("GET", server.url())).read()
        with pytest.raises(ReadError, match="without answering"):
            await client.send("GET", server.url())
        assert server.connections == 2
        assert len(server.requests) == 3


async def test_no_retry_once_the_response_began() -> None:
    """no retry: a reused connection that failed after some response bytes raises"""
    async with (
        RawServer(response(200, b"a"), then_close(b"HTTP/1.1 200 O"), response(200, b"never")) as server,
        HttpClient() as client,
    ):
        await (await client.send("GET", server.url())).read()
        with pytest.raises(ReadError, match="middle of the response head"):
            await client.send("GET", server.url())
        assert server.connections == 1


async def test_no_retry_after_a_timeout() -> None:
    """no retry: a read timeout on a reused connection is raised as it is"""
    async with (
        RawServer(response(200, b"a"), silence, response(200, b"never")) as server,
        HttpClient(read_timeout=0.05) as client,
    ):
        await (await client.send("GET", server.url())).read()
        with pytest.raises(ReadTimeoutError):
            await client.send("GET", server.url())
        assert server.connections == 1
        await server.wait_disconnects(1)


async def test_every_failure_is_an_http_error() -> None:
    """(extra) OS errors never leak: all failures above derive from HttpError"""
    async with RawServer(reset()) as server, HttpClient() as client:
        with pytest.raises(HttpError):
            await client.send("GET", server.url())
        await until(lambda: server.disconnects == 1)
