"""Timeouts: connect (TCP, TLS handshake, proxy CONNECT), write and read, each its own error class.

Tiny timeouts against servers that stay silent; the connect step hangs for real against a
listening socket whose accept queue is full (Linux drops the SYN then).
"""

from __future__ import annotations

import asyncio
import ssl

import pytest

from dsh.adapters.http import (
    ConnectTimeoutError,
    HttpClient,
    HttpError,
    HttpTimeoutError,
    ReadTimeoutError,
    WriteTimeoutError,
)
from tests.adapters.http.helpers import Exchange, HeadOnly, RawServer, response, silence, then_stall, unanswered_port


def test_the_timeout_errors_form_one_family() -> None:
    """(extra) each timeout is an HttpTimeoutError, an HttpError and a builtin TimeoutError"""
    for kind in (ConnectTimeoutError, WriteTimeoutError, ReadTimeoutError):
        error = kind("x", url="http://h/")
        assert isinstance(error, HttpTimeoutError)
        assert isinstance(error, HttpError)
        assert isinstance(error, TimeoutError)
        assert (str(error), error.url) == ("x", "http://h/")


async def test_connect_timeout() -> None:
    """every timeout: a TCP connect that never completes raises ConnectTimeoutError"""
    with unanswered_port() as port:
        async with HttpClient(connect_timeout=0.05) as client:
            with pytest.raises(ConnectTimeoutError, match=f"127.0.0.1:{port}") as caught:
                await client.send("GET", f"http://127.0.0.1:{port}/")
            assert caught.value.url == f"http://127.0.0.1:{port}/"
            assert client.idle_count == 0


async def test_a_tls_handshake_that_never_completes_is_a_connect_timeout() -> None:
    """every timeout: the TLS handshake counts toward connect_timeout"""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    async with RawServer(silence) as server, HttpClient(connect_timeout=0.05, ssl_context=context) as client:
        with pytest.raises(ConnectTimeoutError):
            await client.send("GET", server.url(scheme="https"))
        await server.wait_disconnects(1)


async def test_a_proxy_that_never_answers_connect_is_a_connect_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """every timeout: waiting for the proxy's CONNECT answer counts toward connect_timeout"""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    async with RawServer(silence) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url())
        async with HttpClient(connect_timeout=0.05, ssl_context=context) as client:
            with pytest.raises(ConnectTimeoutError, match="through the proxy"):
                await client.send("GET", "https://api.example.com/")
        assert proxy.requests[0].line == "CONNECT api.example.com:443 HTTP/1.1"
        await proxy.wait_disconnects(1)


async def test_read_timeout_waiting_for_the_head() -> None:
    """every timeout: no response head within read_timeout raises ReadTimeoutError; nothing pooled"""
    async with RawServer(silence) as server, HttpClient(read_timeout=0.05) as client:
        with pytest.raises(ReadTimeoutError, match=r"within 0\.05 s") as caught:
            await client.send("GET", server.url())
        assert caught.value.url == server.url()
        assert client.idle_count == 0
        await server.wait_disconnects(1)


async def test_read_timeout_in_the_body() -> None:
    """every timeout: a body that stops coming raises ReadTimeoutError while iterating"""
    partial = then_stall(response(200, b"part", [("content-length", "10")], length=False))
    async with RawServer(partial) as server, HttpClient(read_timeout=0.05) as client:
        answer = await client.send("GET", server.url())
        pieces = aiter(answer)
        assert await anext(pieces) == b"part"
        with pytest.raises(ReadTimeoutError, match="response body"):
            await anext(pieces)
        assert client.idle_count == 0
        await server.wait_disconnects(1)


async def test_the_read_timeout_bounds_each_wait_not_the_consumer(monkeypatch: pytest.MonkeyPatch) -> None:
    """(extra) time the consumer spends between reads never counts: only waits for bytes do"""
    gate = asyncio.Event()

    async def answer(exchange: Exchange) -> bool:
        await exchange.send(response(200, b"one", [("content-length", "6")], length=False))
        await gate.wait()
        await exchange.send(b"two")
        return True

    async with RawServer(answer) as server, HttpClient(read_timeout=30.0) as client:
        reply = await client.send("GET", server.url())
        pieces = aiter(reply)
        assert await anext(pieces) == b"one"
        loop = asyncio.get_running_loop()
        real_time = loop.time
        monkeypatch.setattr(loop, "time", lambda: real_time() + 60.0)  # the consumer "took a minute"
        await asyncio.sleep(0)  # the connection's timer is due now: it runs in this loop pass ...
        await asyncio.sleep(0)  # ... and has found nobody waiting
        monkeypatch.setattr(loop, "time", real_time)
        gate.set()
        assert await anext(pieces) == b"two"


async def test_write_timeout() -> None:
    """every timeout: a server that stops reading the request raises WriteTimeoutError"""
    never = asyncio.Event()

    async def deaf(exchange: Exchange) -> bool:
        await never.wait()  # reads nothing more; cancelled when the server closes
        return False

    async with RawServer(HeadOnly(deaf)) as server, HttpClient(write_timeout=0.05) as client:
        with pytest.raises(WriteTimeoutError, match="sending the request") as caught:
            await client.send("POST", server.url(), {}, b"x" * (48 << 20))
        assert caught.value.url == server.url()
        assert client.idle_count == 0
