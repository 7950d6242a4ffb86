"""The DeepSeek adapter: one streaming chat-completions call per ``stream()`` over httpx (SPEC §10).

``DeepSeekAdapter.stream`` posts the serialized request to ``{base_url}/chat/completions``
and turns the event stream into chunks. Failures raise ``LlmError`` while iterating:

* a non-2xx answer: the body's ``error.message`` (else ``DeepSeek API error (HTTP <n>)``)
  with code :func:`http_error_code` and ``status``;
* a 2xx answer whose body is empty: ``EMPTY_RESPONSE``;
* a transport failure while reading the body, or a body that ends before ``[DONE]``:
  ``STREAM_CLOSED`` (the httpx error is the ``cause``);
* a transport failure before the answer arrives (refused connection, DNS, invalid URL,
  timeout) or an HTTP client that cannot be set up (a bad ``SSL_CERT_FILE``):
  ``NETWORK``, naming the URL and where to fix it;
* a malformed payload: ``MALFORMED_RESPONSE``; a ``prefill`` option: ``UNSUPPORTED``.

The HTTP exchange runs in a pump task owned by the stream: it reads the body, parses
the events and translates them as each piece arrives, and hands the chunks to the
consumer in batches (one wake-up per read, not per event).

Connection reuse: once the outcome of a stream is known (``[DONE]`` or a malformed
payload), the pump goes on reading the rest of the body -- normally just the chunked
terminator -- for at most ``drain_timeout`` seconds, so the connection returns to the
pool; the stream ends once it has. A body that does not end in time is dropped with
its connection.

Cancellation: the options' abort signal cancels the pump at once -- while connecting,
waiting for headers, stalled in a body read or draining -- and the iteration raises the
kernel's ``AbortError`` carrying the signal's reason. The consumer's early ``aclose()``
and task cancellation stop the pump the same way, and the stream returns only after the
pump closed the response, so a cancelled stream never holds a pooled connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterable, AsyncIterator, Sequence
from types import TracebackType

import httpx

from dsh.adapters.deepseek.serialize import ReasoningEffort, RequestDefaults, Thinking, serialize_request
from dsh.adapters.deepseek.sse import SseParser
from dsh.adapters.deepseek.translate import StreamTranslator
from dsh.core.errors import LlmError, error_message
from dsh.core.llm import GenerateOptions, LlmAdapter, StreamChunk
from dsh.kernel import AbortError, AbortSignal

PUBLIC_BASE_URL = "https://api.deepseek.com"
"""The provider's public endpoint (the default base URL)."""

USER_AGENT = "deepseek-harness/0.0.1"
"""The ``user-agent`` header of every request."""

DEFAULT_MODELS: tuple[str, ...] = ("deepseek-v4-flash", "deepseek-v4-pro")
"""The model names served when the config lists none (sent verbatim as the wire ``model``)."""

DEFAULT_TIMEOUT = httpx.Timeout(30.0, read=300.0)
"""Connect/write/pool limits of 30 s; a body read may wait 300 s (thinking can be slow)."""

DRAIN_TIMEOUT = 1.0
"""Seconds a stream may spend reading the rest of a body after ``[DONE]`` so its connection can be reused."""


def http_error_code(status: int) -> str:
    """The ``LlmError`` code of an HTTP error status.

    401/403 ``AUTH``, 429 ``RATE_LIMIT``, 400 ``INVALID_REQUEST``, 5xx ``SERVER``,
    anything else ``HTTP_<status>``.
    """
    if status in (401, 403):
        return "AUTH"
    if status == 429:
        return "RATE_LIMIT"
    if status == 400:
        return "INVALID_REQUEST"
    if status >= 500:
        return "SERVER"
    return f"HTTP_{status}"


async def _api_error(response: httpx.Response) -> LlmError:
    status = response.status_code
    message = f"DeepSeek API error (HTTP {status})"
    try:
        parsed = json.loads(await response.aread())
    except (httpx.HTTPError, ValueError):
        parsed = None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    detail = error.get("message") if isinstance(error, dict) else None
    if isinstance(detail, str):
        message = detail
    return LlmError(message, http_error_code(status), status)


def _stream_closed(cause: Exception | None = None) -> LlmError:
    return LlmError("SSE stream ended without [DONE]", "STREAM_CLOSED", cause=cause)


def _body(response: httpx.Response) -> AsyncIterable[bytes]:
    """The body's bytes as they arrive.

    The request asks for ``accept-encoding: identity``, so the raw stream is the body:
    reading it directly skips httpx's decoding layers and leaves closing the response
    to the pump (which guards the close against cancellation). A server that encodes
    the body anyway is read through httpx's decoding iterator, which closes the
    response itself at the end of the body.
    """
    stream = response.stream
    if isinstance(stream, httpx.AsyncByteStream) and response.headers.get("content-encoding", "identity") == "identity":
        return stream
    return response.aiter_bytes()


class _Exchange:
    """One HTTP exchange, run by a pump task that hands batches of chunks to the consumer.

    The pump owns the response from start to end: it sends the request, parses and
    translates the body as pieces arrive, appends the chunks to :attr:`_ready` and wakes
    the consumer (waiting in :meth:`take`), and always closes the response. Once the
    outcome is known -- the end, or a failure delivered to the consumer -- the exchange is
    *settled*; after ``[DONE]`` the pump drains the rest of the body (bounded) before it
    closes the response, so the connection goes back to the pool.

    Stopping -- an abort, the consumer's ``aclose()`` before the stream settled, task
    cancellation -- cancels the pump once, which unwinds the httpx call in progress;
    :meth:`aclose` waits for the pump, so no connection outlives the stream. The pump
    only suspends inside httpx's reads, so httpx's internal generators are never left
    suspended half-way. Once the pump is closing the response it is not cancelled any
    more: a cancellation would interrupt the close and leak the connection.
    """

    def __init__(
        self, client: httpx.AsyncClient, request: httpx.Request, signal: AbortSignal | None, drain_timeout: float
    ) -> None:
        self._ready: list[StreamChunk] = []
        self._failure: Exception | None = None
        self._ended = False
        self._settled = False
        self._abort: AbortError | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._signal = signal
        self._stopped = False
        self._closing = False
        self._received = False
        self._parser = SseParser()
        self._translator = StreamTranslator()
        self._drain_timeout = drain_timeout
        self._pump = asyncio.ensure_future(self._run(client, request))
        self._unhook = signal.add_callback(self._on_abort) if signal is not None else None

    # ------------------------------------------------------------------ consumer side
    @property
    def abort(self) -> AbortError | None:
        """The ``AbortError`` to raise once the signal fired, else None."""
        return self._abort

    async def take(self) -> list[StreamChunk]:
        """The chunks that arrived since the last call (waiting for some); ``[]`` once the stream ended.

        Raises the pump's failure after the chunks that preceded it, or ``AbortError``
        as soon as the signal fired.
        """
        while True:
            if self._abort is not None:
                raise self._abort
            ready = self._ready
            if ready:
                self._ready = []
                return ready
            if self._failure is not None:
                raise self._failure
            if self._ended:
                return []
            waiter = self._waiter = asyncio.get_running_loop().create_future()
            await waiter

    async def aclose(self) -> None:
        """Stop the pump unless the stream settled, then wait until it has closed the response."""
        try:
            if not self._settled:
                self._stop()
            if not self._pump.done():
                try:
                    await asyncio.wait((self._pump,))
                except asyncio.CancelledError:  # cancelled while the pump drains: stop it at once
                    self._stop()
                    await asyncio.wait((self._pump,))
                    raise
        finally:
            if self._unhook is not None:
                self._unhook()

    # --------------------------------------------------------------------- pump side
    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():  # the consumer may have been cancelled while waiting
                waiter.set_result(None)

    def _on_abort(self) -> None:
        assert self._signal is not None
        self._abort = AbortError(self._signal.reason)
        self._stop()
        self._wake()

    def _stop(self) -> None:
        if not self._stopped and not self._closing:
            self._stopped = True
            self._pump.cancel()

    def _fail(self, error: Exception) -> None:
        if not self._settled:
            self._settled = True
            self._failure = error
            self._wake()

    def _end(self) -> None:
        self._settled = self._ended = True

    async def _run(self, client: httpx.AsyncClient, request: httpx.Request) -> None:
        try:
            try:
                response = await client.send(request, stream=True)
            except httpx.HTTPError as error:
                raise LlmError(
                    f"DeepSeek API request to {request.url} failed: {error_message(error)} "
                    "(check baseURL / $DEEPSEEK_BASE_URL and the network)",
                    "NETWORK",
                    cause=error,
                ) from error
            try:
                await self._read(response)
            finally:
                self._closing = True
                await response.aclose()
        except Exception as error:
            self._fail(error)

    async def _read(self, response: httpx.Response) -> None:
        if not 200 <= response.status_code < 300:
            raise await _api_error(response)
        pieces = aiter(_body(response))
        try:
            async for data in pieces:
                if self._feed(data):
                    break
            else:
                self._finish()
                return
        except httpx.HTTPError as error:
            raise _stream_closed(error) from error
        # Settled: read what is left of the body (normally the chunked terminator), bounded in time.
        with contextlib.suppress(httpx.HTTPError, TimeoutError):
            async with asyncio.timeout(self._drain_timeout):
                async for _ in pieces:
                    pass

    def _feed(self, data: bytes) -> bool:
        """Parse and translate one piece of the body; True once the stream settled."""
        if data:
            self._received = True
        payloads = self._parser.feed(data)
        if not payloads:
            return False
        ready = self._ready
        try:
            for payload in payloads:
                if self._translator.feed(payload, ready):
                    self._end()
                    break
        except LlmError as error:  # a malformed payload: the chunks before it, then the error
            self._fail(error)
            return True
        if ready:
            self._wake()
        return self._ended

    def _finish(self) -> None:
        """The body ended: translate a final event left without its blank line, or fail."""
        if not self._received:
            raise LlmError("DeepSeek API returned no response body", "EMPTY_RESPONSE")
        for payload in self._parser.finish():
            self._translator.feed(payload, self._ready)
        if not self._parser.done:
            raise _stream_closed()
        self._end()
        self._wake()


def _new_client() -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=DEFAULT_TIMEOUT)


class DeepSeekAdapter(LlmAdapter):
    """Streams DeepSeek chat completions; see the module docstring.

    ``models`` records the names this adapter is meant to serve (the plugin registers
    them); the model of each call is ``options.model``. ``thinking`` and
    ``reasoning_effort`` are sent on every request when set. ``drain_timeout`` bounds
    the read of a body's tail after ``[DONE]`` (see the module docstring).

    Without ``client`` the adapter owns one ``httpx.AsyncClient``: :meth:`prepare`
    starts building it in a worker thread, else the first stream builds it. A given
    client stays the caller's to close. :meth:`aclose` (or ``async with``) releases the
    owned client; a closed adapter refuses new streams.
    """

    def __init__(
        self,
        api_key: str,
        base_url: str = PUBLIC_BASE_URL,
        *,
        models: Sequence[str] = DEFAULT_MODELS,
        thinking: Thinking | None = None,
        reasoning_effort: ReasoningEffort | None = None,
        client: httpx.AsyncClient | None = None,
        drain_timeout: float = DRAIN_TIMEOUT,
    ) -> None:
        self.base_url = base_url
        self.models = tuple(models)
        self.defaults = RequestDefaults(thinking, reasoning_effort)
        self.drain_timeout = drain_timeout
        self._headers = {
            "authorization": f"Bearer {api_key}",
            "content-type": "application/json",
            "accept": "text/event-stream",
            "accept-encoding": "identity",
            "user-agent": USER_AGENT,
        }
        self._client = client
        self._owns_client = client is None
        self._building: asyncio.Future[httpx.AsyncClient] | None = None
        self._closed = False

    @property
    def url(self) -> str:
        """Where requests go: ``{base_url}/chat/completions``."""
        return f"{self.base_url}/chat/completions"

    async def __aenter__(self) -> DeepSeekAdapter:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    def prepare(self) -> None:
        """Start building the owned HTTP client in a worker thread; call it on the event loop.

        Building a client loads the CA bundle (tens of milliseconds, mostly outside the
        GIL), so starting it when the plugin loads overlaps that work with the rest of the
        boot instead of delaying the first request. Idempotent; does nothing with a given
        client, once the client exists, or once closed.
        """
        if self._client is None and self._building is None and not self._closed:
            self._building = asyncio.ensure_future(asyncio.to_thread(_new_client))

    async def aclose(self) -> None:
        """Refuse new streams and close the owned HTTP client, waiting for one being built (idempotent)."""
        self._closed = True
        client, self._client = self._client, None
        building, self._building = self._building, None
        if building is not None:
            with contextlib.suppress(Exception):  # a client that failed to build needs no closing
                client = await building
        if client is not None and self._owns_client:
            await client.aclose()

    async def _http(self) -> httpx.AsyncClient:
        if self._client is None and not self._closed:
            try:
                client = await self._building if self._building is not None else _new_client()
            except OSError as error:  # the CA bundle or certificate settings cannot be loaded
                raise LlmError(
                    f"cannot set up the HTTP client for {self.url}: {error} (check SSL_CERT_FILE / SSL_CERT_DIR)",
                    "NETWORK",
                    cause=error,
                ) from error
            if not self._closed:  # else aclose() closed it while it was being built
                self._client = client
        if self._closed or self._client is None:
            raise LlmError("this DeepSeekAdapter is closed: create a new one (or reload llm-deepseek)", "CLOSED")
        return self._client

    def _request(self, client: httpx.AsyncClient, content: bytes) -> httpx.Request:
        try:
            return client.build_request("POST", self.url, headers=self._headers, content=content)
        except httpx.InvalidURL as error:
            raise LlmError(
                f"DeepSeek API URL {self.url!r} is invalid: {error} (check baseURL / $DEEPSEEK_BASE_URL)",
                "NETWORK",
                cause=error,
            ) from error

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """One streaming call; see the module docstring for failures, connection reuse and cancellation."""
        body = serialize_request(options, self.defaults)
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        signal = options.signal
        if signal is not None:
            signal.throw_if_aborted()
        client = await self._http()
        exchange = _Exchange(client, self._request(client, content), signal, self.drain_timeout)
        try:
            while batch := await exchange.take():
                for chunk in batch:
                    if exchange.abort is not None:  # aborted while the consumer held this batch
                        raise exchange.abort
                    yield chunk
        finally:
            await exchange.aclose()
