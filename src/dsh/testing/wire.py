"""A local chat-completions server that answers from a script (tests, benchmarks, CLI runs).

:class:`WireServer` listens on ``127.0.0.1`` (a random port) and speaks just enough
HTTP/1.1 to stand in for an OpenAI-compatible provider such as DeepSeek: it answers
``POST <base_url>/chat/completions`` with the next entry of its script and records every
request it sees. Connections are keep-alive capable; a streamed reply is framed with
chunked transfer encoding or delimited by closing the connection.

Script entries:

* :class:`Reply` -- a 200 ``text/event-stream`` answer made of stream events
  (:class:`TextDelta`, :class:`ReasoningDelta`, :class:`ToolCallDelta`, :class:`Finish`,
  :class:`Usage`, :class:`Raw`, :class:`RawBytes`) and an ``ending``: ``"done"`` sends
  ``data: [DONE]``; ``"end"`` ends the body without it; ``"cut"`` drops the connection
  mid-body; ``"stall"`` sends the events, then waits until the client goes away;
* :class:`HttpError` -- any status with a JSON or non-JSON body (see :func:`api_error`);
* :class:`NoBody` -- a status line with an empty body;
* :class:`Silence` -- no answer until the client gives up;
* :class:`RawResponse` -- arbitrary bytes as the whole answer, then the connection closes.

Entries are answered in order; with ``repeat=True`` the script starts over when it runs
out, otherwise an exhausted script answers 500 with a message saying so. A ``respond``
callable (``RecordedRequest -> Entry``) answers each chat request instead of the script,
for replies that depend on the conversation (many agents sharing one server). Helpers build
common replies: :func:`text_reply`, :func:`tool_call`, :func:`long_reply`.

``pace`` (seconds, default 0) paces a streamed reply like a real provider: the head and the
first event go out at once, then one event every ``pace`` seconds (``pace=0.05`` is 20
chunks a second). :class:`SentAt` is a text delta holding the server's clock when it is sent,
to measure the delay from the wire to a client's log.

The server never raises because a client misbehaves: a disconnect at any point just
ends that connection, and a malformed request gets a 400 naming the problem (then the
server reads until the client closes, so the client sees the answer, not a reset). ``open_connections`` counts
the connections still open; :meth:`WireServer.wait_for_connections` and
:meth:`WireServer.wait_for_requests` wait for those counts without sleeping.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from http import HTTPStatus
from types import TracebackType
from typing import Any, Literal, TypeAlias

CREATED = 1_700_000_000
"""The ``created`` stamp of every chunk (a constant: the server reads no clock)."""

WIRE_MODEL = "wire-model"
"""The ``model`` field of every chunk."""

_ROUTE = "/chat/completions"


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _sse(data: str) -> bytes:
    return f"data: {data}\n\n".encode()


def _chunk(choices: list[dict[str, Any]], usage: Usage | None = None) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "id": "wire-chunk",
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": WIRE_MODEL,
        "system_fingerprint": "fp_wire",
        "choices": choices,
    }
    if usage is not None:
        payload["usage"] = usage.wire()
    return payload


def _choice(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}


# --------------------------------------------------------------------------- events
@dataclass(frozen=True)
class Usage:
    """Token usage as DeepSeek reports it; as an event, a trailing chunk with ``choices: []``.

    ``cached_tokens`` fills both ``prompt_tokens_details.cached_tokens`` and
    ``prompt_cache_hit_tokens``; ``reasoning_tokens`` fills
    ``completion_tokens_details.reasoning_tokens``. None omits them.
    """

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None

    def wire(self) -> dict[str, Any]:
        usage: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }
        if self.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
            usage["prompt_cache_hit_tokens"] = self.cached_tokens
            usage["prompt_cache_miss_tokens"] = self.prompt_tokens - self.cached_tokens
        if self.reasoning_tokens is not None:
            usage["completion_tokens_details"] = {"reasoning_tokens": self.reasoning_tokens}
        return usage

    def sse(self) -> bytes:
        return _sse(_compact(_chunk([], self)))


@dataclass(frozen=True)
class TextDelta:
    """A ``delta.content`` fragment."""

    text: str

    def sse(self) -> bytes:
        return _sse(_compact(_chunk([_choice({"content": self.text})])))


@dataclass(frozen=True)
class ReasoningDelta:
    """A ``delta.reasoning_content`` fragment (``""`` is the first thinking chunk's shape)."""

    text: str

    def sse(self) -> bytes:
        return _sse(_compact(_chunk([_choice({"content": None, "reasoning_content": self.text})])))


@dataclass(frozen=True)
class ToolCallDelta:
    """One ``delta.tool_calls`` fragment for wire ``index``.

    ``id`` and ``name`` are sent only when given (the provider sends them on the first
    fragment); ``arguments=None`` leaves the ``arguments`` key out.
    """

    index: int
    arguments: str | None = ""
    id: str | None = None
    name: str | None = None

    def sse(self) -> bytes:
        call: dict[str, Any] = {"index": self.index}
        if self.id is not None:
            call["id"] = self.id
            call["type"] = "function"
        function: dict[str, Any] = {}
        if self.name is not None:
            function["name"] = self.name
        if self.arguments is not None:
            function["arguments"] = self.arguments
        call["function"] = function
        return _sse(_compact(_chunk([_choice({"tool_calls": [call]})])))


@dataclass(frozen=True)
class Finish:
    """The chunk carrying ``finish_reason`` (any string), with ``usage`` attached if given."""

    reason: str = "stop"
    usage: Usage | None = None

    def sse(self) -> bytes:
        return _sse(_compact(_chunk([_choice({}, self.reason)], self.usage)))


@dataclass(frozen=True)
class Raw:
    """One SSE event whose ``data:`` value is ``data`` verbatim (malformed JSON included)."""

    data: str

    def sse(self) -> bytes:
        return _sse(self.data)


@dataclass(frozen=True)
class RawBytes:
    """Bytes written to the body as they are (custom framing, split UTF-8, comments)."""

    data: bytes

    def sse(self) -> bytes:
        return self.data


@dataclass(frozen=True)
class SentAt:
    """A ``delta.content`` fragment ``"<ns> "``: ``time.time_ns()`` when the event is written.

    A paced server (``pace > 0``) renders it as it sends it; an unpaced one when the
    reply's body is first rendered (then reused). :func:`sent_at_stamps` reads the
    stamps back from the text a client assembled.
    """

    def sse(self) -> bytes:
        return TextDelta(f"{time.time_ns()} ").sse()


def sent_at_stamps(text: str) -> list[int]:
    """The ``time.time_ns()`` stamps that :class:`SentAt` deltas put into ``text``, in order."""
    return [int(word) for word in text.split()]


StreamEvent: TypeAlias = SentAt | Usage | TextDelta | ReasoningDelta | ToolCallDelta | Finish | Raw | RawBytes
Ending: TypeAlias = Literal["done", "end", "cut", "stall"]
Framing: TypeAlias = Literal["chunked", "close"]


# -------------------------------------------------------------------------- entries
@dataclass(frozen=True)
class Reply:
    """A 200 event-stream answer; see the module docstring for ``ending`` and ``framing``."""

    events: Sequence[StreamEvent] = ()
    ending: Ending = "done"
    framing: Framing = "chunked"

    def __post_init__(self) -> None:
        object.__setattr__(self, "events", tuple(self.events))

    @property
    def reusable(self) -> bool:
        """Whether the connection can carry another request after this answer."""
        return self.framing == "chunked" and self.ending in ("done", "end")

    @cached_property
    def body(self) -> bytes:
        """The body bytes as framed on the wire (rendered once, then reused)."""
        return b"".join(self.frames())

    def frames(self) -> Iterator[bytes]:
        """The body as framed on the wire, one piece per event (rendered as it is taken), then the end."""
        chunked = self.framing == "chunked"
        done = (_sse("[DONE]"),) if self.ending == "done" else ()
        for part in itertools.chain((event.sse() for event in self.events), done):
            if not chunked:
                yield part
            elif part:
                yield b"%x\r\n%s\r\n" % (len(part), part)
        if chunked and self.reusable:
            yield b"0\r\n\r\n"


@dataclass(frozen=True)
class HttpError:
    """A non-streaming answer: ``status`` with ``body``.

    A mapping body is sent as JSON (``application/json``); text or bytes are sent as
    they are with ``content_type`` (``text/plain`` unless given). ``headers`` are sent
    too (``[("retry-after", "2")]``).
    """

    status: int
    body: Mapping[str, Any] | str | bytes = b""
    content_type: str | None = None
    headers: Sequence[tuple[str, str]] = ()

    def encoded(self) -> tuple[str, bytes]:
        if isinstance(self.body, Mapping):
            return self.content_type or "application/json", _compact(dict(self.body)).encode()
        data = self.body.encode() if isinstance(self.body, str) else self.body
        return self.content_type or "text/plain; charset=utf-8", data


@dataclass(frozen=True)
class NoBody:
    """A status line and headers with an empty body (``content-length: 0``)."""

    status: int = 200


@dataclass(frozen=True)
class Silence:
    """No answer at all: the request is read, then the server waits until the client goes away."""


@dataclass(frozen=True)
class RawResponse:
    """``data`` written verbatim as the whole response (status line included), then the connection closes.

    For answers no well-behaved server gives: a body shorter than its
    ``content-length``, broken framing, garbage instead of HTTP.
    """

    data: bytes


Entry: TypeAlias = Reply | HttpError | NoBody | Silence | RawResponse


def api_error(
    status: int, message: str, error_type: str = "invalid_request_error", headers: Sequence[tuple[str, str]] = ()
) -> HttpError:
    """An error answer shaped like the provider's: ``{"error": {"message", "type", ...}}``, with ``headers``."""
    body = {"error": {"message": message, "type": error_type, "param": None, "code": None}}
    return HttpError(status, body, headers=headers)


def tool_call(index: int, call_id: str, name: str, arguments: str, *, pieces: int = 2) -> list[ToolCallDelta]:
    """The fragments of one streamed tool call: ``id``/``name`` ride on the first only.

    ``arguments`` is cut into ``pieces`` fragments of about equal length (at least one).
    """
    count = max(1, pieces)
    size = -(-len(arguments) // count) if arguments else 0
    fragments = [arguments[i : i + size] for i in range(0, len(arguments), size)] if size else [""]
    first, *rest = fragments
    return [ToolCallDelta(index, first, call_id, name), *(ToolCallDelta(index, piece) for piece in rest)]


def text_reply(
    *parts: str,
    reasoning: Sequence[str] = (),
    usage: Usage | None = None,
    finish: str = "stop",
) -> Reply:
    """A complete answer: reasoning fragments, text fragments, then the finish chunk.

    With ``reasoning`` the stream opens with the empty ``reasoning_content`` chunk the
    provider sends first in thinking mode. ``usage`` rides on the finish chunk.
    """
    events: list[StreamEvent] = []
    if reasoning:
        events.append(ReasoningDelta(""))
        events.extend(ReasoningDelta(text) for text in reasoning)
    events.extend(TextDelta(text) for text in parts)
    events.append(Finish(finish, usage))
    return Reply(events)


def long_reply(chunks: int, text: str = "x", usage: Usage | None = None) -> Reply:
    """``chunks`` text fragments of ``text`` then a ``stop`` finish, rendered once and sent at once."""
    return text_reply(*([text] * chunks), usage=usage if usage is not None else Usage(1, chunks))


# ------------------------------------------------------------------------- requests
@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server read it.

    ``headers`` has lower-case names (repeated headers joined with ``", "``); ``json``
    is the parsed body, or None when the body is not JSON.
    """

    method: str
    path: str
    headers: Mapping[str, str]
    body: bytes
    json: Any = None
    version: str = "HTTP/1.1"

    @property
    def keep_alive(self) -> bool:
        """Whether the client allows another request on this connection."""
        return self.version == "HTTP/1.1" and self.headers.get("connection", "").lower() != "close"


class _BadRequestError(Exception):
    """The client sent something that is not an HTTP/1.1 request we can read."""


def _parse_json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    data = bytearray()
    while True:
        try:
            line = await reader.readuntil(b"\r\n")
        except asyncio.LimitOverrunError:
            raise _BadRequestError("chunk size line too long") from None
        try:
            size = int(line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise _BadRequestError(f"bad chunk size line {line!r}") from None
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":
                pass
            return bytes(data)
        data += await reader.readexactly(size)
        await reader.readexactly(2)


async def _read_request(reader: asyncio.StreamReader) -> RecordedRequest | None:
    """The next request on the connection, or None when the client has gone away."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    except asyncio.LimitOverrunError:
        raise _BadRequestError("request head too large") from None
    request_line, *lines = head[:-4].decode("latin-1").split("\r\n")
    parts = request_line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise _BadRequestError(f"bad request line {request_line!r}")
    method, path, version = parts
    headers: dict[str, str] = {}
    for line in lines:
        name, sep, value = line.partition(":")
        if not sep:
            raise _BadRequestError(f"bad header line {line!r}")
        key = name.strip().lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = await _read_chunked(reader)
    else:
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError:
            raise _BadRequestError(f"bad content-length {headers['content-length']!r}") from None
        body = await reader.readexactly(length)
    return RecordedRequest(method, path, headers, body, _parse_json(body), version)


def _head(status: int, headers: Sequence[tuple[str, str]]) -> bytes:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Unknown"
    lines = [f"HTTP/1.1 {status} {phrase}", *(f"{name}: {value}" for name, value in headers)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _wait_for_disconnect(reader: asyncio.StreamReader) -> None:
    while await reader.read(65536):
        pass


# --------------------------------------------------------------------------- server
@dataclass
class _Waiter:
    ready: Callable[[], bool]
    future: asyncio.Future[None] = field(repr=False)


class WireServer:
    """A scripted chat-completions server; see the module docstring.

    Use it as an async context manager (``async with WireServer(script) as server``) or
    call :meth:`start` / :meth:`close`. Closing cancels every connection handler,
    including stalled ones, and waits for them. The server is owned by one event loop.
    """

    def __init__(
        self,
        script: Iterable[Entry] = (),
        *,
        repeat: bool = False,
        respond: Callable[[RecordedRequest], Entry] | None = None,
        pace: float = 0.0,
    ) -> None:
        self.script: list[Entry] = list(script)
        self.repeat = repeat
        self.respond = respond
        self.pace = pace
        self.requests: list[RecordedRequest] = []
        self.open_connections = 0
        self.total_connections = 0
        self._answered = 0
        self._chat_requests = 0
        self._server: asyncio.Server | None = None
        self._closing = False
        self._handlers: set[asyncio.Task[None]] = set()
        self._waiters: list[_Waiter] = []

    # ---------------------------------------------------------------- lifecycle
    async def __aenter__(self) -> WireServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Listen on a random port of 127.0.0.1."""
        if self._server is not None:
            raise RuntimeError("WireServer is already started; create a new one per run")
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)

    async def close(self) -> None:
        """Stop listening, end every connection (stalled ones too) and wait for them. Idempotent."""
        server = self._server
        if server is None or self._closing:
            return
        self._closing = True
        server.close()
        handlers = list(self._handlers)
        for task in handlers:
            task.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        await server.wait_closed()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("WireServer is not started: use `async with WireServer(...)` or await start()")
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (no trailing slash, like a provider base URL)."""
        return f"http://127.0.0.1:{self.port}"

    # ------------------------------------------------------------------- script
    def add(self, *entries: Entry) -> None:
        """Append entries to the script (they are answered after the current ones)."""
        self.script.extend(entries)

    def _next_entry(self) -> Entry | None:
        """The entry for the next chat request; None (the cursor stays) when the script ran out."""
        self._chat_requests += 1
        index = self._answered
        if self.repeat and self.script:
            index %= len(self.script)
        if index >= len(self.script):
            return None
        self._answered += 1
        return self.script[index]

    # ------------------------------------------------------------------ waiting
    async def wait_for_connections(self, count: int = 0) -> None:
        """Return once exactly ``count`` connections are open."""
        await self._wait(lambda: self.open_connections == count)

    async def wait_for_requests(self, count: int) -> None:
        """Return once at least ``count`` requests have been recorded."""
        await self._wait(lambda: len(self.requests) >= count)

    async def _wait(self, ready: Callable[[], bool]) -> None:
        if ready():
            return
        waiter = _Waiter(ready, asyncio.get_running_loop().create_future())
        self._waiters.append(waiter)
        try:
            await waiter.future
        finally:
            self._waiters.remove(waiter)

    def _notify(self) -> None:
        for waiter in self._waiters:
            if not waiter.future.done() and waiter.ready():
                waiter.future.set_result(None)

    # -------------------------------------------------------------- connections
    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._closing:  # pragma: no cover - race: a connection accepted in the tick close() runs in
            writer.close()
            return
        task = asyncio.get_running_loop().create_task(self._serve(reader, writer), name="wire connection")
        self._handlers.add(task)
        task.add_done_callback(self._handlers.discard)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open_connections += 1
        self.total_connections += 1
        self._notify()
        try:
            try:
                while await self._exchange(reader, writer):
                    pass
            except _BadRequestError as error:
                await self._send_error(writer, 400, f"wire server: {error}", keep=False)
                writer.write_eof()  # lingering close: read what the client still sends, so it gets no reset
                await _wait_for_disconnect(reader)
        except (OSError, asyncio.IncompleteReadError):
            pass  # the client went away mid-request or mid-answer (ConnectionError is an OSError)
        finally:
            writer.close()
            try:
                await writer.wait_closed()
            except ConnectionError:
                pass
            finally:
                self.open_connections -= 1
                self._notify()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; True when the connection may carry another."""
        request = await _read_request(reader)
        if request is None:
            return False
        self.requests.append(request)
        self._notify()
        keep = request.keep_alive
        if request.method != "POST" or not request.path.endswith(_ROUTE):
            message = f"wire server: no route for {request.method} {request.path}; POST <base_url>{_ROUTE}"
            return await self._send_error(writer, 404, message, keep=keep)
        entry = self._next_entry() if self.respond is None else self.respond(request)
        if entry is None:
            message = (
                f"wire server: script exhausted: request #{self._chat_requests} but the script has "
                f"{len(self.script)} entries; add entries to WireServer(script) or pass repeat=True"
            )
            return await self._send_error(writer, 500, message, keep=keep)
        if isinstance(entry, HttpError):
            content_type, body = entry.encoded()
            return await self._send(writer, entry.status, content_type, body, keep=keep, extra=entry.headers)
        if isinstance(entry, NoBody):
            return await self._send(writer, entry.status, "text/event-stream", b"", keep=keep)
        if isinstance(entry, Silence):
            await _wait_for_disconnect(reader)
            return False
        if isinstance(entry, RawResponse):
            writer.write(entry.data)
            await writer.drain()
            return False
        return await self._stream(reader, writer, entry, keep=keep)

    async def _send(
        self,
        writer: asyncio.StreamWriter,
        status: int,
        content_type: str,
        body: bytes,
        *,
        keep: bool,
        extra: Sequence[tuple[str, str]] = (),
    ) -> bool:
        headers = [("content-type", content_type), ("content-length", str(len(body))), *extra]
        if not keep:
            headers.append(("connection", "close"))
        writer.write(_head(status, headers) + body)
        await writer.drain()
        return keep

    async def _send_error(self, writer: asyncio.StreamWriter, status: int, message: str, *, keep: bool) -> bool:
        body = _compact({"error": {"message": message, "type": "wire_server_error"}}).encode()
        return await self._send(writer, status, "application/json", body, keep=keep)

    async def _stream(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, reply: Reply, *, keep: bool
    ) -> bool:
        headers = [("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-cache")]
        if reply.framing == "chunked":
            headers.append(("transfer-encoding", "chunked"))
        else:
            headers.append(("connection", "close"))
        if self.pace > 0:
            writer.write(_head(200, headers))
            frames = reply.frames()
            frame = next(frames, b"")  # rendered as it is sent: a SentAt stamps the moment it leaves
            while frame:
                writer.write(frame)
                await writer.drain()
                await asyncio.sleep(self.pace)
                frame = next(frames, b"")
        else:
            writer.write(_head(200, headers) + reply.body)
            await writer.drain()
        if reply.ending == "stall":
            await _wait_for_disconnect(reader)
        return keep and reply.reusable


__all__ = [
    "CREATED",
    "WIRE_MODEL",
    "Ending",
    "Entry",
    "Finish",
    "Framing",
    "HttpError",
    "NoBody",
    "Raw",
    "RawBytes",
    "RawResponse",
    "ReasoningDelta",
    "RecordedRequest",
    "Reply",
    "SentAt",
    "Silence",
    "StreamEvent",
    "TextDelta",
    "ToolCallDelta",
    "Usage",
    "WireServer",
    "api_error",
    "long_reply",
    "sent_at_stamps",
    "text_reply",
    "tool_call",
]
