"""The DeepSeek adapter: one streaming chat-completions call per ``stream()`` (SPEC §10).

``DeepSeekAdapter.stream`` posts the serialized request to ``{base_url}/chat/completions``
and turns the event stream into chunks. Failures raise ``LlmError`` while iterating:

* a non-2xx answer: the body's ``error.message`` (else ``DeepSeek API error (HTTP <n>)``)
  with code :func:`http_error_code` and ``status``;
* a 2xx answer whose body is empty: ``EMPTY_RESPONSE``;
* a transport failure while reading the body, or a body that ends before ``[DONE]``:
  ``STREAM_CLOSED`` (the :class:`~dsh.adapters.http.HttpError` is the ``cause``);
* a transport failure before the answer arrives (refused connection, DNS, invalid URL,
  timeout, proxy) or TLS that cannot be set up (a bad ``SSL_CERT_FILE``): ``NETWORK``,
  naming the URL and where to fix it;
* a malformed payload: ``MALFORMED_RESPONSE``; a ``prefill`` option: ``UNSUPPORTED``.

HTTP is :class:`dsh.adapters.http.HttpClient` (keep-alive pool, TLS, http proxies from
the environment). The exchange runs in a pump task owned by the stream: it reads the
body, parses the events and translates them as each piece arrives, and hands the
chunks to the consumer in batches (one wake-up per read, not per event).

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
from collections.abc import AsyncIterator, Sequence
from types import TracebackType
from typing import Any

from dsh.adapters.deepseek.encode import RequestEncoder
from dsh.adapters.deepseek.serialize import ReasoningEffort, RequestDefaults, Thinking
from dsh.adapters.deepseek.sse import SseParser
from dsh.adapters.deepseek.translate import StreamTranslator
from dsh.adapters.http import HttpClient, HttpError, HttpResponse, InvalidUrlError, TlsSetupError
from dsh.core.errors import LlmError, error_message
from dsh.core.llm import GenerateOptions, LlmAdapter, StreamChunk
from dsh.core.redact import redact_secrets, register_secret
from dsh.kernel import AbortError, AbortSignal

PUBLIC_BASE_URL = "https://api.deepseek.com"
"""The provider's public endpoint (the default base URL)."""

USER_AGENT = "deepseek-harness/0.0.1"
"""The ``user-agent`` header of every request."""

DEFAULT_MODELS: tuple[str, ...] = ("deepseek-v4-flash", "deepseek-v4-pro")
"""The model names served when the config lists none (sent verbatim as the wire ``model``)."""

CONNECT_TIMEOUT = 30.0
"""Seconds to open a connection (TCP, TLS, proxy tunnel), and for each wait to send more of a request."""

READ_TIMEOUT = 300.0
"""Seconds each read of the answer may wait (the head included): thinking can be slow."""

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


async def _api_error(response: HttpResponse) -> LlmError:
    status = response.status
    message = f"DeepSeek API error (HTTP {status})"
    try:
        parsed = json.loads(await response.read())
    except (HttpError, ValueError):
        parsed = None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    detail = error.get("message") if isinstance(error, dict) else None
    if isinstance(detail, str):
        message = redact_secrets(detail)
    return LlmError(message, http_error_code(status), status)


def _stream_closed(cause: Exception | None = None) -> LlmError:
    return LlmError("SSE stream ended without [DONE]", "STREAM_CLOSED", cause=cause)


class _Exchange:
    """One HTTP exchange, run by a pump task that hands batches of chunks to the consumer.

    The pump owns the response from start to end: it sends the request, parses and
    translates the body as pieces arrive, appends the chunks to :attr:`_ready` and wakes
    the consumer (waiting in :meth:`take`), and always closes the response. Once the
    outcome is known -- the end, or a failure delivered to the consumer -- the exchange is
    *settled*; after ``[DONE]`` the pump drains the rest of the body (bounded) before it
    closes the response, so the connection goes back to the pool.

    Stopping -- an abort, the consumer's ``aclose()`` before the stream settled, task
    cancellation -- cancels the pump once, which unwinds the HTTP call in progress (a
    cancelled send or read closes its connection); :meth:`aclose` waits for the pump, so
    no connection outlives the stream. Closing the response awaits nothing, so no
    cancellation can land half-way through it.
    """

    def __init__(
        self,
        client: HttpClient,
        url: str,
        headers: dict[str, str],
        content: bytes,
        signal: AbortSignal | None,
        drain_timeout: float,
    ) -> None:
        self._ready: list[StreamChunk] = []
        self._failure: Exception | None = None
        self._ended = False
        self._settled = False
        self._abort: AbortError | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._signal = signal
        self._stopped = False
        self._received = False
        self._parser = SseParser()
        self._translator = StreamTranslator()
        self._drain_timeout = drain_timeout
        self._pump = asyncio.ensure_future(self._run(client, url, headers, content))
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
        if not self._stopped:
            self._stopped = True
            self._pump.cancel()

    def _fail(self, error: Exception) -> None:
        if not self._settled:
            self._settled = True
            self._failure = error
            self._wake()

    def _end(self) -> None:
        self._settled = self._ended = True

    async def _run(self, client: HttpClient, url: str, headers: dict[str, str], content: bytes) -> None:
        try:
            try:
                response = await client.send("POST", url, headers, content)
            except HttpError as error:
                raise _network_error(url, error) from error
            try:
                await self._read(response)
            finally:
                await response.aclose()  # awaits nothing: a cancellation cannot cut it short
        except Exception as error:
            self._fail(error)

    async def _read(self, response: HttpResponse) -> None:
        if not 200 <= response.status < 300:
            raise await _api_error(response)
        try:
            async for data in response:
                if self._feed(data):
                    break
            else:
                self._finish()
                return
        except HttpError as error:
            raise _stream_closed(error) from error
        # Settled: read what is left of the body (normally the chunked terminator), bounded in time.
        with contextlib.suppress(HttpError, TimeoutError):
            async with asyncio.timeout(self._drain_timeout):
                async for _ in response:
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


def _network_error(url: str, error: HttpError) -> LlmError:
    """The ``NETWORK`` failure of a request that got no answer, naming where to fix it."""
    if isinstance(error, InvalidUrlError):
        message = f"DeepSeek API URL {url!r} is invalid: {error} (check baseURL / $DEEPSEEK_BASE_URL)"
    elif isinstance(error, TlsSetupError):
        message = f"cannot set up TLS for {url}: {error}"
    else:
        message = (
            f"DeepSeek API request to {url} failed: {error_message(error)} "
            "(check baseURL / $DEEPSEEK_BASE_URL and the network)"
        )
    return LlmError(message, "NETWORK", cause=error)


def _new_client() -> HttpClient:
    return HttpClient(connect_timeout=CONNECT_TIMEOUT, read_timeout=READ_TIMEOUT, write_timeout=CONNECT_TIMEOUT)


class DeepSeekAdapter(LlmAdapter):
    """Streams DeepSeek chat completions; see the module docstring.

    ``models`` records the names this adapter is meant to serve (the plugin registers
    them); the model of each call is ``options.model``. ``thinking`` and
    ``reasoning_effort`` are sent on every request when set. ``drain_timeout`` bounds
    the read of a body's tail after ``[DONE]`` (see the module docstring). Request
    bodies are encoded by one :class:`~dsh.adapters.deepseek.encode.RequestEncoder`, which
    keeps the wire JSON of recent messages so a growing history is not re-encoded whole.

    Without ``client`` the adapter owns one :class:`~dsh.adapters.http.HttpClient`
    (proxies from the environment, :data:`CONNECT_TIMEOUT`, :data:`READ_TIMEOUT`); for an
    ``https`` base URL, :meth:`prepare` loads its CA bundle in a worker thread. A given
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
        client: HttpClient | None = None,
        drain_timeout: float = DRAIN_TIMEOUT,
    ) -> None:
        register_secret(api_key)
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
        self._encoder = RequestEncoder()
        self._client = client
        self._owns_client = client is None
        self._preparing: asyncio.Future[Any] | None = None
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
        """Create the owned HTTP client and, for an ``https`` base URL, load its CA bundle in a worker thread.

        Call it on the event loop. Loading the CA bundle takes tens of milliseconds
        (mostly outside the GIL): starting it when the plugin loads overlaps it with the
        rest of the boot instead of delaying the first request. A bundle that cannot be
        loaded fails the first call instead (``NETWORK``). Idempotent; does nothing with
        a given client or once closed.
        """
        if self._closed or not self._owns_client or self._preparing is not None:
            return
        client = self._owned()
        if self.base_url.lower().startswith("https:"):
            self._preparing = asyncio.ensure_future(asyncio.to_thread(client.prepare_tls))

    async def aclose(self) -> None:
        """Refuse new streams and close the owned HTTP client, waiting for its TLS setup (idempotent)."""
        self._closed = True
        client, self._client = self._client, None
        preparing, self._preparing = self._preparing, None
        if preparing is not None:
            with contextlib.suppress(Exception):  # a failed setup is reported by the call that needs it
                await preparing
        if client is not None and self._owns_client:
            await client.aclose()

    def _owned(self) -> HttpClient:
        if self._client is None:
            self._client = _new_client()
        return self._client

    def _http(self) -> HttpClient:
        if self._closed:
            raise LlmError("this DeepSeekAdapter is closed: create a new one (or reload llm-deepseek)", "CLOSED")
        return self._owned()

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """One streaming call; see the module docstring for failures, connection reuse and cancellation."""
        content = self._encoder.encode(options, self.defaults)
        signal = options.signal
        if signal is not None:
            signal.throw_if_aborted()
        client = self._http()
        exchange = _Exchange(client, self.url, self._headers, content, signal, self.drain_timeout)
        try:
            while batch := await exchange.take():
                for chunk in batch:
                    if exchange.abort is not None:  # aborted while the consumer held this batch
                        raise exchange.abort
                    yield chunk
        finally:
            await exchange.aclose()
