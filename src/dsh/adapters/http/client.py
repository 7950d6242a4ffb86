"""The client: connection pool, request sending, retry of stale pooled connections, proxies and TLS.

``await client.send(method, url, headers, body)`` returns an :class:`HttpResponse` as
soon as the final response head has arrived; the caller iterates the body and closes
the response. Connections are kept alive per origin (scheme, host, port, proxy), up to
``max_idle_per_origin`` idle ones, newest reused first. A pooled connection the server
closed meanwhile is discarded. A request that fails on a reused connection before any
byte of its response arrived (the server closed its idle end as the request went out)
is sent once more on a fresh connection; no other failure is retried.

Cancelling ``send`` at any point closes the connection it was using and lets
``CancelledError`` through unchanged.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Hashable, Mapping
from types import TracebackType

from dsh.adapters.http.connection import HttpConnection
from dsh.adapters.http.errors import (
    ClientClosedError,
    ConnectError,
    ConnectTimeoutError,
    HttpError,
    ProxyError,
    ReadError,
    WriteError,
)
from dsh.adapters.http.proxy import Proxy, ProxySettings
from dsh.adapters.http.request import RequestHeaders, encode_connect, framing, request_prefix
from dsh.adapters.http.response import HttpResponse
from dsh.adapters.http.tls import TlsContextCache
from dsh.adapters.http.url import Url, parse_url

_CACHE_SIZE = 64
"""Entries kept by each client's URL and request-head caches (cleared when full)."""


class HttpClient:
    """An HTTP/1.1 client with a keep-alive pool; see the module docstring and ``docs/http.md``.

    Timeouts are in seconds: ``connect_timeout`` bounds opening a connection (TCP, TLS
    handshake, proxy tunnel), ``write_timeout`` each wait for the socket to accept more of
    the request, ``read_timeout`` each wait for response bytes (the head included).
    ``trust_env`` reads proxy variables (when the client is created) and
    ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` (when the TLS context is built). ``ssl_context``
    replaces the default verifying context. The client belongs to one event loop;
    :meth:`prepare_tls` may run in another thread.
    """

    def __init__(
        self,
        *,
        connect_timeout: float = 30.0,
        read_timeout: float = 300.0,
        write_timeout: float = 30.0,
        trust_env: bool = True,
        ssl_context: ssl.SSLContext | None = None,
        max_idle_per_origin: int = 8,
    ) -> None:
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.write_timeout = write_timeout
        self.max_idle_per_origin = max_idle_per_origin
        self._tls = TlsContextCache(ssl_context, trust_env=trust_env)
        self._proxies = ProxySettings.from_environ() if trust_env else None
        self._idle: dict[Hashable, list[HttpConnection]] = {}
        self._urls: dict[str, Url] = {}
        self._heads: dict[Hashable, tuple[bytes, bool]] = {}
        self._closed = False

    # ------------------------------------------------------------- lifecycle
    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` was called."""
        return self._closed

    def prepare_tls(self) -> ssl.SSLContext:
        """Build the TLS context now (thread-safe, idempotent); raises :class:`TlsSetupError` if it cannot load.

        Loading a CA bundle takes tens of milliseconds: call it in a worker thread
        (``asyncio.to_thread(client.prepare_tls)``) to overlap that with other work.
        """
        return self._tls.get()

    @property
    def idle_count(self) -> int:
        """How many idle connections the pool holds (all origins)."""
        return sum(len(conns) for conns in self._idle.values())

    async def aclose(self) -> None:
        """Refuse new requests and close every idle connection (idempotent).

        Connections in use by open responses are closed when those responses are.
        """
        self._closed = True
        idle = [conn for conns in self._idle.values() for conn in conns]
        self._idle.clear()
        for conn in idle:
            conn.on_idle_close = None
            conn.close()
        for conn in idle:
            await conn.wait_closed()

    async def __aenter__(self) -> HttpClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.aclose()

    # --------------------------------------------------------------- sending
    async def send(self, method: str, url: str, headers: RequestHeaders = (), body: bytes = b"") -> HttpResponse:
        """Send one request; return once the final response head arrived.

        Raises :class:`InvalidUrlError` / :class:`InvalidRequestError` before any I/O, then
        :class:`ConnectError`, :class:`ProxyError`, :class:`TlsSetupError`,
        :class:`WriteError`, :class:`ReadError`, :class:`RemoteProtocolError` or a
        :class:`HttpTimeoutError` (see :mod:`dsh.adapters.http.errors`).
        """
        if self._closed:
            raise ClientClosedError("this HttpClient is closed: create a new one", url=url)
        target = self._parse(url)
        proxy = self._proxy(target, url)
        prefix, close = self._prefix(method, url, target, headers, proxy if target.scheme == "http" else None)
        request = prefix + framing(method, len(body))
        key = (target.scheme, target.host, target.port, proxy)
        head_only = method == "HEAD"
        conn = self._acquire(key)
        if conn is not None:
            try:
                return await self._exchange(conn, url, request, body, head_only, close)
            except (ReadError, WriteError):
                if conn.parser.received:
                    raise
                # The server closed its idle end as the request went out: once more, on a fresh connection.
        conn = await self._connect(target, url, proxy, key)
        return await self._exchange(conn, url, request, body, head_only, close)

    async def _exchange(
        self, conn: HttpConnection, url: str, request: bytes, body: bytes, head_only: bool, close: bool
    ) -> HttpResponse:
        conn.begin(request, body, url=url, head_only=head_only, close=close)
        try:
            if conn.write_paused:
                await conn.drain()
            head = await conn.read_head()
        except BaseException:
            conn.close()
            raise
        return HttpResponse(conn, head, url, self._release)

    def _parse(self, url: str) -> Url:
        target = self._urls.get(url)
        if target is None:
            target = parse_url(url)
            if len(self._urls) >= _CACHE_SIZE:
                self._urls.clear()
            self._urls[url] = target
        return target

    def _prefix(
        self, method: str, url: str, target: Url, headers: RequestHeaders, proxy: Proxy | None
    ) -> tuple[bytes, bool]:
        """The validated head prefix, from the cache when the same request was made before."""
        fields: tuple[tuple[str, str], ...] = tuple(headers.items()) if isinstance(headers, Mapping) else tuple(headers)
        key = (method, url, fields, proxy)
        try:
            cached = self._heads.get(key)
        except TypeError:  # pairs given as lists: not hashable, so not cached
            return request_prefix(method, target, fields, proxy)
        if cached is None:
            cached = request_prefix(method, target, fields, proxy)
            if len(self._heads) >= _CACHE_SIZE:
                self._heads.clear()
            self._heads[key] = cached
        return cached

    def _proxy(self, target: Url, url: str) -> Proxy | None:
        if self._proxies is None:
            return None
        try:
            return self._proxies.proxy_for(target)
        except ProxyError as error:
            error.url = url
            raise

    # ------------------------------------------------------------------ pool
    def _acquire(self, key: Hashable) -> HttpConnection | None:
        """The newest idle connection to ``key`` (one that ended has already left the pool), or None."""
        conns = self._idle.get(key)
        if not conns:
            return None
        conn = conns.pop()
        conn.on_idle_close = None
        return conn

    def _release(self, conn: HttpConnection) -> None:
        """Pool a finished connection, or close it (not reusable, client closed, pool full)."""
        conn.finish()
        if self._closed or not conn.reusable:
            conn.close()
            return
        conns = self._idle.setdefault(conn.key, [])
        conns.append(conn)
        conn.on_idle_close = self._forget
        if len(conns) > self.max_idle_per_origin:
            oldest = conns.pop(0)
            oldest.on_idle_close = None
            oldest.close()

    def _forget(self, conn: HttpConnection) -> None:
        """An idle connection ended (the server closed it, or sent bytes nobody asked for): drop it."""
        self._idle[conn.key].remove(conn)

    # ------------------------------------------------------------ connecting
    async def _connect(self, target: Url, url: str, proxy: Proxy | None, key: Hashable) -> HttpConnection:
        loop = asyncio.get_running_loop()
        tls = self._tls_context(url) if target.scheme == "https" else None
        conn = HttpConnection(loop, key, read_timeout=self.read_timeout, write_timeout=self.write_timeout)
        host, port = (target.host, target.port) if proxy is None else (proxy.host, proxy.port)
        direct_tls = tls if proxy is None else None
        try:
            async with asyncio.timeout(self.connect_timeout):
                await loop.create_connection(
                    lambda: conn,
                    host,
                    port,
                    ssl=direct_tls,
                    server_hostname=target.host if direct_tls is not None else None,
                    ssl_handshake_timeout=self.connect_timeout if direct_tls is not None else None,
                )
                if proxy is not None and tls is not None:
                    await self._tunnel(conn, target, url, proxy)
                    await conn.start_tls(tls, target.host, self.connect_timeout)
        except HttpError:
            conn.close()
            raise
        except (OSError, UnicodeError) as error:
            conn.close()
            raise _connect_error(error, target, url, proxy, self.connect_timeout) from error
        except BaseException:
            conn.close()
            raise
        return conn

    def _tls_context(self, url: str) -> ssl.SSLContext:
        try:
            return self._tls.get()
        except HttpError as error:
            error.url = url
            raise

    async def _tunnel(self, conn: HttpConnection, target: Url, url: str, proxy: Proxy) -> None:
        """Ask ``proxy`` for a ``CONNECT`` tunnel to ``target`` (bounded by the connect timeout)."""
        conn.begin(encode_connect(target, proxy), b"", url=url, connect=True)
        try:
            head = await conn.read_head(bounded=False)
        except HttpError as error:
            raise ProxyError(
                f"the proxy {proxy.url} (from {proxy.variable}) failed while opening a tunnel to "
                f"{target.authority}: {error}",
                url=url,
            ) from error
        if not 200 <= head.status < 300:
            hint = f": check the credentials in {proxy.variable}" if head.status == 407 else ""
            raise ProxyError(
                f"the proxy {proxy.url} (from {proxy.variable}) refused to open a tunnel to {target.authority}: "
                f"{head.status} {head.reason}{hint}",
                url=url,
            )
        if conn.parser.extra:
            raise ProxyError(f"the proxy {proxy.url} sent data before the TLS handshake to {target.authority}", url=url)
        conn.finish()

    # ------------------------------------------------------------- internals
    def __repr__(self) -> str:
        return f"<HttpClient {'closed' if self._closed else 'open'} idle={self.idle_count}>"


def _connect_error(error: BaseException, target: Url, url: str, proxy: Proxy | None, timeout: float) -> HttpError:
    """The error to raise for an ``OSError`` (or IDNA ``UnicodeError``) met while connecting."""
    where = target.authority if proxy is None else f"{target.authority} through the proxy {proxy.url}"
    if isinstance(error, TimeoutError):
        return ConnectTimeoutError(
            f"connecting to {where} took longer than connect_timeout ({timeout} s): check the network, "
            "or raise the timeout",
            url=url,
        )
    if isinstance(error, ssl.SSLError):
        return ConnectError(
            f"the TLS handshake with {target.authority} failed: {error} "
            "(check the server's certificate, or SSL_CERT_FILE / SSL_CERT_DIR)",
            url=url,
        )
    if isinstance(error, socket.gaierror | UnicodeError):
        host = target.host if proxy is None else proxy.host
        return ConnectError(f"cannot resolve the host {host!r}: {error} (check the URL and DNS)", url=url)
    return ConnectError(f"cannot connect to {where}: {error} (is the server up, and the URL right?)", url=url)


__all__ = ["HttpClient"]
