"""A response whose head has arrived; its body is read by iterating it.

:class:`HttpResponse` owns its connection until the body has been received to its end
(the connection then goes back to the pool at once, even if the consumer has not taken
every piece yet) or until :meth:`HttpResponse.aclose` (which pools a connection whose
body has fully arrived and closes any other). Closing is synchronous underneath: no
await stands between the decision and the release or close, so a cancellation cannot
leave a half-finished connection in the pool.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

from dsh.adapters.http.connection import HttpConnection
from dsh.adapters.http.decode import body_decoder
from dsh.adapters.http.errors import HttpError, ReadError
from dsh.adapters.http.parse import Headers, ResponseHead

_OPEN = 0  # the connection is attached; more body may come from it
_TAIL = 1  # the body has arrived; pieces may remain, and the decoder's flush
_ENDED = 2  # everything was delivered
_BROKEN = 3  # closed early or failed: the body cannot be read any more


class HttpResponse:
    """Status line, headers and the body as an async iterator of byte pieces.

    ``async for piece in response`` yields the body (de-chunked, and decoded when the
    response has a ``content-encoding`` of gzip or deflate) as it arrives, never an
    empty piece; each wait for more is bounded by the client's ``read_timeout``.
    :meth:`read` returns the rest of the body at once. A failure while reading (reset,
    early end, timeout, decoding, cancellation) closes the connection; iterating again
    afterwards, or after :meth:`aclose` cut the body short, raises :class:`ReadError`.
    """

    __slots__ = (
        "_conn",
        "_content",
        "_decoder",
        "_release",
        "_rest",
        "_state",
        "headers",
        "http_version",
        "reason",
        "status",
        "url",
    )

    def __init__(
        self, connection: HttpConnection, head: ResponseHead, url: str, release: Callable[[HttpConnection], None]
    ) -> None:
        self.status: int = head.status
        self.reason: str = head.reason
        self.http_version: str = head.http_version
        self.headers: Headers = head.headers
        self.url = url
        encoding = head.headers.get("content-encoding")
        self._decoder = None if encoding is None else body_decoder(encoding, url)
        self._conn: HttpConnection | None = connection
        self._release = release
        self._rest: list[bytes] = []
        self._state = _OPEN
        self._content: bytes | None = None
        if connection.parser.complete:
            self._detach()

    def __repr__(self) -> str:
        return f"<HttpResponse {self.status} {self.reason!r} {self.url}>"

    # ------------------------------------------------------------------ body
    def __aiter__(self) -> HttpResponse:
        return self

    async def __anext__(self) -> bytes:
        while True:
            conn = self._conn
            if conn is not None:
                parser = conn.parser
                if parser.body:
                    data = conn.take()
                elif parser.complete:
                    self._detach()
                    continue
                else:
                    try:
                        await conn.wait_body()
                    except BaseException:
                        self._break()
                        raise
                    continue
            elif self._rest:
                rest = self._rest
                self._rest = []
                data = rest[0] if len(rest) == 1 else b"".join(rest)
            elif self._state == _TAIL:
                decoder = self._decoder
                if decoder is not None:  # check the end of the encoded body; zlib may hand out a last piece
                    self._decoder = None
                    self._state = _BROKEN
                    self._rest = [decoder.flush()]
                self._state = _ENDED
                continue
            elif self._state == _ENDED:
                raise StopAsyncIteration
            else:
                raise ReadError("the response was closed before its body was read to the end", url=self.url)
            decoder = self._decoder
            if decoder is not None:
                try:
                    data = decoder.decode(data)
                except HttpError:
                    self._break()
                    raise
            if data:
                return data

    async def read(self) -> bytes:
        """The rest of the body (all of it unless iteration began), joined; the same bytes on later calls."""
        if self._content is None:
            self._content = b"".join([piece async for piece in self])
        return self._content

    # --------------------------------------------------------------- closing
    async def aclose(self) -> None:
        """Release the connection: pooled if the whole body arrived and it may be reused, else closed. Idempotent.

        Runs without awaiting anything, so it completes even in a cancelled task.
        """
        conn = self._conn
        if conn is not None:
            self._conn = None
            if conn.parser.complete:
                self._release(conn)
            else:
                conn.close()
        if self._state != _ENDED:
            self._state = _BROKEN
            self._rest = []

    async def __aenter__(self) -> HttpResponse:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.aclose()

    # ------------------------------------------------------------- internals
    def _detach(self) -> None:
        """The body has arrived: keep its untaken pieces and hand the connection back."""
        conn = self._conn
        assert conn is not None
        self._conn = None
        parser = conn.parser
        self._rest = parser.body
        parser.body = []
        self._state = _TAIL
        self._release(conn)

    def _break(self) -> None:
        conn = self._conn
        self._conn = None
        self._state = _BROKEN
        self._rest = []
        if conn is not None:
            conn.close()


__all__ = ["HttpResponse"]
