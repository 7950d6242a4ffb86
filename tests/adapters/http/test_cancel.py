"""Cancellation at every stage closes the connection, pools nothing, and lets CancelledError through."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable
from typing import Any

import pytest

from dsh.adapters.http import HttpClient, ReadError
from tests.adapters.http.helpers import (
    Exchange,
    HeadOnly,
    RawServer,
    response,
    silence,
    then_stall,
    unanswered_port,
)


async def cancel_soon(awaitable: Awaitable[Any]) -> None:
    """Start ``awaitable`` as a task, let it run to its first wait, cancel it, expect CancelledError."""
    task = asyncio.ensure_future(awaitable)
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_cancel_while_connecting() -> None:
    """cancellation while the TCP connect hangs: CancelledError, nothing pooled"""
    with unanswered_port() as port:
        async with HttpClient() as client:
            await cancel_soon(client.send("GET", f"http://127.0.0.1:{port}/"))
            assert client.idle_count == 0


async def test_cancel_during_the_tls_handshake() -> None:
    """cancellation while the TLS handshake waits: the connection is closed"""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    async with RawServer(silence) as server, HttpClient(ssl_context=context) as client:
        task = asyncio.ensure_future(client.send("GET", server.url(scheme="https")))
        await server.wait_for(lambda: server.connections == 1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await server.wait_disconnects(1)
        assert client.idle_count == 0


async def test_cancel_while_the_proxy_opens_a_tunnel(monkeypatch: pytest.MonkeyPatch) -> None:
    """cancellation while waiting for the proxy's CONNECT answer: the connection to the proxy is closed"""
    async with RawServer(silence) as proxy:
        monkeypatch.setenv("HTTPS_PROXY", proxy.url())
        async with HttpClient(ssl_context=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)) as client:
            task = asyncio.ensure_future(client.send("GET", "https://api.example.com/"))
            await proxy.wait_requests(1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await proxy.wait_disconnects(1)


async def test_cancel_while_waiting_for_the_head() -> None:
    """cancellation while waiting for the response head: the connection is closed, nothing pooled"""
    async with RawServer(silence) as server, HttpClient() as client:
        task = asyncio.ensure_future(client.send("GET", server.url()))
        await server.wait_requests(1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await server.wait_disconnects(1)
        assert client.idle_count == 0


async def test_cancel_while_sending_a_large_body() -> None:
    """cancellation while the request body waits for the socket: the connection is closed"""
    never = asyncio.Event()

    async def deaf(exchange: Exchange) -> bool:
        await never.wait()
        return False

    async with RawServer(HeadOnly(deaf)) as server, HttpClient() as client:
        task = asyncio.ensure_future(client.send("POST", server.url(), {}, b"x" * (48 << 20)))
        await server.wait_requests(1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert client.idle_count == 0


async def test_cancel_while_reading_the_body() -> None:
    """cancellation of a body iteration: the connection is closed, the body unreadable afterwards"""
    partial = then_stall(response(200, b"part", [("content-length", "10")], length=False))
    async with RawServer(partial) as server, HttpClient() as client:
        answer = await client.send("GET", server.url())
        pieces = aiter(answer)
        assert await anext(pieces) == b"part"
        await cancel_soon(anext(pieces))
        await server.wait_disconnects(1)
        assert client.idle_count == 0
        with pytest.raises(ReadError):
            await anext(pieces)
        await answer.aclose()


async def test_a_timeout_around_the_body_closes_the_connection() -> None:
    """(extra) asyncio.timeout around a stalled read: TimeoutError outside, the connection closed"""
    partial = then_stall(response(200, b"", [("content-length", "10")], length=False))
    async with RawServer(partial, response(200, b"fresh")) as server, HttpClient() as client:
        answer = await client.send("GET", server.url())
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.02):
                await answer.read()
        await server.wait_disconnects(1)
        assert await (await client.send("GET", server.url())).read() == b"fresh"
        assert server.connections == 2


async def test_cancel_on_a_reused_connection_is_not_retried_and_not_pooled() -> None:
    """(extra) a cancelled wait on a pooled connection closes it; the next request opens a new one"""
    async with RawServer(response(200, b"a"), silence, response(200, b"b")) as server, HttpClient() as client:
        assert await (await client.send("GET", server.url())).read() == b"a"
        task = asyncio.ensure_future(client.send("GET", server.url()))
        await server.wait_requests(2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert client.idle_count == 0
        assert await (await client.send("GET", server.url())).read() == b"b"
        assert [request.connection for request in server.requests] == [1, 1, 2]


async def test_closing_a_response_in_a_cancelled_task_still_closes_it() -> None:
    """(extra) aclose() awaits nothing: a task cancelled before it calls aclose still releases the connection"""
    partial = then_stall(response(200, b"", [("content-length", "10")], length=False))
    async with RawServer(partial) as server, HttpClient() as client:
        answer = await client.send("GET", server.url())

        async def consumer() -> None:
            try:
                await asyncio.Event().wait()
            finally:
                await answer.aclose()

        await cancel_soon(consumer())
        await server.wait_disconnects(1)
        assert client.idle_count == 0
