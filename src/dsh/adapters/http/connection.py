"""One HTTP/1.1 connection: an ``asyncio.Protocol`` driving a :class:`ResponseParser`.

The protocol's callbacks only record what happened (bytes parsed, end of input, loss,
write flow control) and wake the one coroutine waiting on the connection, if any; the
waiting coroutine decides what it means. A connection carries one request at a time:
:meth:`HttpConnection.begin` writes the request, :meth:`~HttpConnection.drain` waits
while the transport's write buffer is full (``write_timeout``),
:meth:`~HttpConnection.read_head` waits for the final response head and
:meth:`~HttpConnection.wait_body` for more body (each wait bounded by ``read_timeout``).

Every wait that ends abnormally -- a timeout, ``CancelledError`` -- closes the
connection before the exception leaves, so an interrupted exchange can never be pooled.
:meth:`~HttpConnection.close` is synchronous (it aborts the transport) and idempotent.

Timeouts use one timer per connection that follows a deadline: a wait moves the
deadline and the timer re-arms itself when it fires early, so a wait costs a clock read,
not a timer handle.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable, Hashable

from dsh.adapters.http.errors import (
    HttpError,
    ReadError,
    ReadTimeoutError,
    WriteError,
    WriteTimeoutError,
)
from dsh.adapters.http.parse import ResponseHead, ResponseParser

READ_HIGH_WATER = 1 << 20
"""Unread body bytes above which the connection stops reading from the socket until the consumer catches up."""


class HttpConnection(asyncio.Protocol):
    """One connection to an origin (or proxy); see the module docstring.

    ``key`` identifies the pool it belongs to; ``requests`` counts the requests begun on
    it (more than one means it was reused from the pool). ``closed`` turns true when the
    connection ended for any reason; it is never reused after that.
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, key: Hashable, *, read_timeout: float, write_timeout: float
    ) -> None:
        self.loop = loop
        self.key = key
        self.read_timeout = read_timeout
        self.write_timeout = write_timeout
        self.transport: asyncio.Transport | None = None
        self.parser = ResponseParser()
        self.requests = 0
        self.url: str | None = None
        self.closed = False
        self.write_paused = False
        self._active = False
        self._eof = False
        self._lost: BaseException | None = None
        self._error: HttpError | None = None
        self._reading_paused = False
        self._close_after = False
        self._taken = 0
        self._waiter: asyncio.Future[bool] | None = None
        self._deadline: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._lost_waiter: asyncio.Future[None] = loop.create_future()
        self.on_idle_close: Callable[[HttpConnection], None] | None = None
        """Set by the pool while the connection is idle in it: called once if the connection ends there."""

    # ----------------------------------------------------------- protocol side
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        if not self._active:  # bytes no request asked for: the connection is unusable
            self.close()
            return
        parser = self.parser
        try:
            parser.feed(data)
        except HttpError as error:
            error.url = self.url
            self._error = error
            self.close()
        else:
            if parser.received - self._taken > READ_HIGH_WATER and not self._reading_paused:
                self._reading_paused = True
                self.transport.pause_reading()  # type: ignore[union-attr]
        self._wake()

    def eof_received(self) -> bool:
        self._on_eof()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is None:
            self._on_eof()
        else:
            self._lost = exc
        self.closed = True
        self._cancel_timer()
        self._wake()
        self._leave_pool()
        self._lost_waiter.set_result(None)

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        self._wake()

    def _on_eof(self) -> None:
        if self._eof:
            return
        self._eof = True
        self.closed = True
        if self._active and not self.parser.complete and self._error is None:
            try:
                self.parser.feed_eof()
            except HttpError as error:
                error.url = self.url
                self._error = error
        self._wake()
        self._leave_pool()

    def _leave_pool(self) -> None:
        callback = self.on_idle_close
        if callback is not None:
            self.on_idle_close = None
            callback(self)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(True)

    # ------------------------------------------------------------- owner side
    @property
    def reusable(self) -> bool:
        """Whether the finished exchange leaves the connection fit for another request."""
        parser = self.parser
        return (
            parser.complete
            and parser.keep_alive
            and not parser.extra
            and not self._close_after
            and not self.closed
            and not self.write_paused
            and not self.transport.is_closing()  # type: ignore[union-attr]
        )

    def begin(
        self,
        request: bytes,
        body: bytes,
        *,
        url: str,
        head_only: bool = False,
        connect: bool = False,
        close: bool = False,
    ) -> None:
        """Write a request (head and body) and expect its response; ``close``: the request said connection: close."""
        self.requests += 1
        self._close_after = close
        self.url = url
        self._active = True
        self._taken = 0
        self._error = None
        self.parser.start(head_only=head_only, connect=connect)
        transport = self.transport
        assert transport is not None
        if body and len(body) < 65536:
            transport.write(request + body)
        else:
            transport.write(request)
            if body:
                transport.write(body)

    def finish(self) -> None:
        """The exchange ended and the connection goes idle: bytes arriving now make it unusable.

        The read timer stays armed: it fires once with nobody waiting and stops, unless
        the next request moved the deadline first (one timer per many requests).
        """
        self._active = False

    async def drain(self) -> None:
        """Wait while the write buffer is above its high-water mark (``write_timeout``).

        Returns early, marking the connection not reusable, if the response starts
        before the request is written. Raises :class:`WriteError` if the connection is lost.
        """
        while self.write_paused:
            if self.parser.received:
                return
            failure = self._failure(WriteError)
            if failure is not None:
                raise failure
            await self._wait(self.write_timeout, WriteTimeoutError, "sending the request")

    async def read_head(self, *, bounded: bool = True) -> ResponseHead:
        """Wait for the final response head; each wait is bounded by ``read_timeout`` when ``bounded``."""
        parser = self.parser
        timeout = self.read_timeout if bounded else None
        while parser.head is None:
            failure = self._failure(ReadError)
            if failure is not None:
                raise failure
            await self._wait(timeout, ReadTimeoutError, "the response")
        return parser.head

    async def wait_body(self) -> None:
        """Wait until more body arrived or the body ended; raises the connection's failure if it has one."""
        failure = self._failure(ReadError)
        if failure is not None:
            raise failure
        await self._wait(self.read_timeout, ReadTimeoutError, "the response body")

    def take(self) -> bytes:
        """The body pieces parsed so far, joined (the caller checked ``parser.body`` is not empty)."""
        parser = self.parser
        pieces = parser.body
        parser.body = []
        self._taken = parser.received
        if self._reading_paused:
            self._reading_paused = False
            self.transport.resume_reading()  # type: ignore[union-attr]
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def close(self) -> None:
        """Close the connection now (abort the transport); idempotent and synchronous."""
        self.closed = True
        self._active = False
        self._cancel_timer()
        self._leave_pool()
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.abort()

    async def wait_closed(self) -> None:
        """Return once the transport reported the connection lost (after :meth:`close` of a made connection)."""
        await self._lost_waiter

    async def start_tls(self, context: ssl.SSLContext, server_hostname: str, handshake_timeout: float) -> None:
        """Upgrade the connection (a proxy tunnel) to TLS; on failure the caller closes it."""
        transport = self.transport
        assert transport is not None
        upgraded = await self.loop.start_tls(
            transport, self, context, server_hostname=server_hostname, ssl_handshake_timeout=handshake_timeout
        )
        self.transport = upgraded

    # -------------------------------------------------------------- internals
    def _failure(self, kind: type[ReadError] | type[WriteError]) -> HttpError | None:
        """The error to raise now that the connection failed, or None while it is healthy."""
        if self._error is not None:
            return self._error
        lost = self._lost
        if lost is None:
            return None
        error = kind(f"the connection to {self.url} was lost: {lost}", url=self.url)
        error.__cause__ = lost
        return error

    async def _wait(self, timeout: float | None, timeout_error: type[HttpError], what: str) -> None:
        loop = self.loop
        waiter: asyncio.Future[bool] = loop.create_future()
        self._waiter = waiter
        if timeout is None:
            self._deadline = None
        else:
            deadline = self._deadline = loop.time() + timeout
            timer = self._timer
            if timer is None or self._timer_at > deadline:
                if timer is not None:
                    timer.cancel()
                self._timer = loop.call_at(deadline, self._on_timer)
                self._timer_at = deadline
        try:
            woken = await waiter
        except BaseException:  # cancelled: the exchange is abandoned
            self._waiter = None
            self.close()
            raise
        self._waiter = None
        if not woken:
            self.close()
            raise timeout_error(f"no progress on {what} from {self.url} within {timeout} s", url=self.url)

    def _on_timer(self) -> None:
        self._timer = None
        waiter = self._waiter
        deadline = self._deadline
        if waiter is None or deadline is None or waiter.done():
            return
        if deadline > self._timer_at:  # the deadline moved since the timer was set
            self._timer = self.loop.call_at(deadline, self._on_timer)
            self._timer_at = deadline
            return
        waiter.set_result(False)

    def _cancel_timer(self) -> None:
        timer = self._timer
        if timer is not None:
            self._timer = None
            timer.cancel()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "active" if self._active else "idle"
        return f"<HttpConnection {self.key!r} {state} requests={self.requests}>"


__all__ = ["READ_HIGH_WATER", "HttpConnection"]
