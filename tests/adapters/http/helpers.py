"""Real servers on 127.0.0.1 for the HTTP client tests, scripted byte for byte.

* :class:`RawServer` -- reads each request (head, then a ``content-length`` body) and
  answers with the next entry of its script: bytes to write (the connection stays open
  for the next request), or an async callable given an :class:`Exchange` that returns
  whether to keep serving the connection. It counts connections, records requests, and
  can wait (on a future, never a sleep) for a number of disconnects.
* answer helpers: :func:`then_close`, :func:`then_stall`, :func:`reset`, :func:`drop`,
  :func:`silence`; :func:`unanswered_port` for a connect that hangs; :func:`until` to let
  the loop run until a condition holds;
* :class:`ProxyServer` -- an http proxy: ``CONNECT`` tunnels to the named target, an
  absolute-form request is answered by the proxy itself; it records what it saw;
* :func:`response` -- a well-formed response's bytes.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import TypeAlias


@dataclass
class Request:
    """One request as the server read it; ``connection`` numbers the server connection (1-based)."""

    line: str
    headers: list[tuple[str, str]]
    body: bytes
    connection: int

    def header(self, name: str) -> str | None:
        key = name.lower()
        return next((value for field_name, value in self.headers if field_name.lower() == key), None)


@dataclass
class Exchange:
    """What a scripted answer sees."""

    request: Request
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()


Answer: TypeAlias = bytes | Callable[[Exchange], Awaitable[bool]]


@dataclass
class HeadOnly:
    """An answer called once the request head was read, before its body (the answer reads it, or not)."""

    answer: Callable[[Exchange], Awaitable[bool]]


def response(
    status: int = 200,
    body: bytes = b"",
    headers: Sequence[tuple[str, str]] = (),
    *,
    reason: str = "OK",
    version: str = "HTTP/1.1",
    length: bool = True,
) -> bytes:
    """A response's bytes: status line, ``headers``, ``content-length`` (unless ``length=False``), body."""
    lines = [f"{version} {status} {reason}", *(f"{name}: {value}" for name, value in headers)]
    if length:
        lines.append(f"content-length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def chunked(*pieces: bytes, trailer: bytes = b"") -> bytes:
    """A chunked body made of ``pieces`` (one chunk each), its last chunk and ``trailer`` lines."""
    return b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n" + trailer + b"\r\n"


def then_close(data: bytes) -> Callable[[Exchange], Awaitable[bool]]:
    """Write ``data``, then close the connection."""

    async def answer(exchange: Exchange) -> bool:
        await exchange.send(data)
        return False

    return answer


def then_stall(data: bytes) -> Callable[[Exchange], Awaitable[bool]]:
    """Write ``data``, then say nothing more until the client goes away."""

    async def answer(exchange: Exchange) -> bool:
        await exchange.send(data)
        await until_eof(exchange.reader)
        return False

    return answer


def reset(data: bytes = b"") -> Callable[[Exchange], Awaitable[bool]]:
    """Write ``data``, then reset the connection (RST, not FIN)."""

    async def answer(exchange: Exchange) -> bool:
        if data:
            await exchange.send(data)
        sock = exchange.writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        exchange.writer.transport.abort()
        return False

    return answer


async def drop(exchange: Exchange) -> bool:
    """Close the connection without answering."""
    return False


async def silence(exchange: Exchange) -> bool:
    """Answer nothing; wait until the client goes away."""
    await until_eof(exchange.reader)
    return False


async def until_eof(reader: asyncio.StreamReader) -> None:
    try:
        while await reader.read(65536):
            pass
    except OSError:
        pass


async def read_request(reader: asyncio.StreamReader, connection: int, *, body: bool = True) -> Request | None:
    """The next request on ``reader`` (its body too when ``body``), or None once the client closed."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, OSError):
        return None
    line, *lines = head[:-4].decode("latin-1").split("\r\n")
    headers = [(name, value.strip()) for name, _, value in (item.partition(":") for item in lines)]
    request = Request(line, headers, b"", connection)
    if body:
        request.body = await reader.readexactly(int(request.header("content-length") or 0))
    return request


class _Counted:
    """Counters with futures that resolve once a count is reached."""

    def __init__(self) -> None:
        self.connections = 0
        self.disconnects = 0
        self._waiters: list[tuple[Callable[[], bool], asyncio.Future[None]]] = []

    async def wait_for(self, ready: Callable[[], bool]) -> None:
        if ready():
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((ready, future))
        await future

    async def wait_disconnects(self, count: int) -> None:
        """Return once ``count`` connections have ended."""
        await self.wait_for(lambda: self.disconnects >= count)

    def _notify(self) -> None:
        for ready, future in list(self._waiters):
            if not future.done() and ready():
                future.set_result(None)


class _Listener(_Counted):
    """A started ``asyncio`` server whose connection handlers are cancelled on close."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        super().__init__()
        self.ssl_context = ssl_context
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> _Listener:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0, ssl=self.ssl_context)
        self.port: int = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    def url(self, path: str = "/", *, scheme: str | None = None, host: str = "127.0.0.1") -> str:
        scheme = scheme or ("https" if self.ssl_context is not None else "http")
        return f"{scheme}://{host}:{self.port}{path}"

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.get_running_loop().create_task(self._run(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self._notify()
        try:
            await self.serve(reader, writer, self.connections)
        except (OSError, asyncio.IncompleteReadError):  # ssl.SSLError is an OSError
            pass
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except OSError:
                pass
            self.disconnects += 1
            self._notify()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> None:
        raise NotImplementedError


class RawServer(_Listener):
    """Answers requests from a script shared by all its connections; see the module docstring."""

    def __init__(self, *answers: Answer | HeadOnly, ssl_context: ssl.SSLContext | None = None) -> None:
        super().__init__(ssl_context)
        self.answers: list[Answer | HeadOnly] = list(answers)
        self.requests: list[Request] = []

    async def __aenter__(self) -> RawServer:
        await super().__aenter__()
        return self

    async def wait_requests(self, count: int) -> None:
        """Return once ``count`` requests have been read."""
        await self.wait_for(lambda: len(self.requests) >= count)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> None:
        while True:
            answer = self.answers[0] if self.answers else response(500, b"script exhausted")
            request = await read_request(reader, number, body=not isinstance(answer, HeadOnly))
            if request is None:
                return
            if self.answers:
                self.answers.pop(0)
            self.requests.append(request)
            self._notify()
            exchange = Exchange(request, reader, writer)
            if isinstance(answer, bytes):
                await exchange.send(answer)
            elif not await (answer.answer if isinstance(answer, HeadOnly) else answer)(exchange):
                return


class ProxyServer(_Listener):
    """An http proxy; ``refuse`` answers every ``CONNECT`` with those bytes instead of tunnelling.

    ``connect_reply`` is what a tunnel opens with; ``lines`` and ``authorizations`` record
    each request line and ``proxy-authorization`` value seen.
    """

    def __init__(
        self, *, refuse: bytes | None = None, connect_reply: bytes = b"HTTP/1.1 200 Connection established\r\n\r\n"
    ) -> None:
        super().__init__()
        self.refuse = refuse
        self.connect_reply = connect_reply
        self.lines: list[str] = []
        self.authorizations: list[str | None] = []

    async def __aenter__(self) -> ProxyServer:
        await super().__aenter__()
        return self

    @property
    def proxy_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, number: int) -> None:
        while True:
            request = await read_request(reader, number)
            if request is None:
                return
            self.lines.append(request.line)
            self.authorizations.append(request.header("proxy-authorization"))
            self._notify()
            method, target, _ = request.line.split(" ")
            if method != "CONNECT":
                writer.write(response(200, f"proxied {target}".encode()))
                await writer.drain()
                continue
            if self.refuse is not None:
                writer.write(self.refuse)
                await writer.drain()
                return
            host, _, port = target.rpartition(":")
            upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
            writer.write(self.connect_reply)
            await writer.drain()
            try:
                await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))
            finally:
                upstream_writer.close()
            return


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        writer.write_eof()
    except OSError:
        writer.close()


async def until(predicate: Callable[[], bool], ticks: int = 1000) -> None:
    """Let the loop run (``sleep(0)`` ticks) until ``predicate()`` holds; fail after ``ticks``."""
    for _ in range(ticks):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"not reached after {ticks} loop ticks")


@contextmanager
def unanswered_port() -> Iterator[int]:
    """A port whose connects hang: a listener with a full accept queue that never accepts (Linux drops the SYN)."""
    with socket.socket() as listener, socket.socket() as filler:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        filler.connect(listener.getsockname())  # takes the one queue slot
        yield listener.getsockname()[1]
