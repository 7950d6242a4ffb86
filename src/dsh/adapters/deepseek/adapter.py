"""The DeepSeek adapter: one streaming chat-completions call per ``stream()`` over httpx (SPEC §10).

``DeepSeekAdapter.stream`` posts the serialized request to ``{base_url}/chat/completions``
and turns the event stream into chunks. Failures raise ``LlmError`` while iterating:

* a non-2xx answer: the body's ``error.message`` (else ``DeepSeek API error (HTTP <n>)``)
  with code :func:`http_error_code` and ``status``;
* a 2xx answer whose body is empty: ``EMPTY_RESPONSE``;
* a transport failure while reading the body, or a body that ends before ``[DONE]``:
  ``STREAM_CLOSED`` (the httpx error is the ``cause``);
* a transport failure before the answer arrives (refused connection, DNS, invalid URL,
  timeout): ``NETWORK``, naming the URL and where to fix it;
* a malformed payload: ``MALFORMED_RESPONSE``; a ``prefill`` option: ``UNSUPPORTED``.

Cancellation: the HTTP exchange runs in a pump task owned by the stream. The options'
abort signal cancels it at once -- while connecting, waiting for headers or stalled
in a body read -- and the iteration raises the kernel's ``AbortError`` carrying the
signal's reason. The consumer's ``aclose()`` and task cancellation stop the pump the
same way, and the stream returns only after the pump closed the response, so a
cancelled stream never holds a pooled connection.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing
from types import TracebackType

import httpx

from dsh.adapters.deepseek.serialize import ReasoningEffort, RequestDefaults, Thinking, serialize_request
from dsh.adapters.deepseek.sse import parse_sse
from dsh.adapters.deepseek.translate import translate
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


class _Exchange:
    """One HTTP exchange, run by a pump task that hands body bytes to the consumer.

    The pump owns the response from start to end: it sends the request, reads the
    body into an unbounded queue (an error or end-of-body marker last) and always
    closes the response. The consumer reads the queue through :meth:`body`. Stopping
    -- an abort, the consumer's ``aclose()``, task cancellation -- cancels the pump
    once, which unwinds the httpx call in progress; :meth:`aclose` waits for it, so no
    connection outlives the stream. Because the pump is always either awaiting the
    network or done, httpx's internal generators are never left suspended half-way.
    Once the pump is closing the response it is not cancelled any more: a second
    cancellation would interrupt the close and leak the connection.
    """

    def __init__(self, client: httpx.AsyncClient, request: httpx.Request, signal: AbortSignal | None) -> None:
        self._queue: asyncio.Queue[bytes | Exception | None] = asyncio.Queue()
        self._abort: AbortError | None = None
        self._signal = signal
        self._stopped = False
        self._closing = False
        self._pump = asyncio.ensure_future(self._run(client, request))
        self._unhook = signal.add_callback(self._on_abort) if signal is not None else None

    def _on_abort(self) -> None:
        assert self._signal is not None
        self._abort = AbortError(self._signal.reason)
        self._stop()
        self._queue.put_nowait(None)  # wake the consumer

    def _stop(self) -> None:
        if not self._stopped and not self._closing:
            self._stopped = True
            self._pump.cancel()

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
            self._queue.put_nowait(error)

    async def _read(self, response: httpx.Response) -> None:
        if not 200 <= response.status_code < 300:
            raise await _api_error(response)
        received = False
        try:
            async for data in response.aiter_bytes():
                received = received or bool(data)
                self._queue.put_nowait(data)
        except httpx.HTTPError as error:
            raise LlmError("SSE stream ended without [DONE]", "STREAM_CLOSED", cause=error) from error
        if not received:
            raise LlmError("DeepSeek API returned no response body", "EMPTY_RESPONSE")
        self._queue.put_nowait(None)

    async def body(self) -> AsyncGenerator[bytes, None]:
        """The body's bytes; raises what the pump met, or ``AbortError`` once the signal fired."""
        while True:
            item = await self._queue.get()
            if self._abort is not None:
                raise self._abort
            if item is None:
                return
            if isinstance(item, Exception):
                raise item
            yield item

    async def aclose(self) -> None:
        """Stop the pump (if still running) and wait until it has closed the response."""
        if self._unhook is not None:
            self._unhook()
        self._stop()
        await asyncio.wait((self._pump,))


class DeepSeekAdapter(LlmAdapter):
    """Streams DeepSeek chat completions; see the module docstring.

    ``models`` records the names this adapter is meant to serve (the plugin registers
    them); the model of each call is ``options.model``. ``thinking`` and
    ``reasoning_effort`` are sent on every request when set. Without ``client`` the
    adapter creates one ``httpx.AsyncClient`` on first use and owns it; a given client
    stays the caller's to close. :meth:`aclose` (or ``async with``) releases the owned
    client; a closed adapter refuses new streams.
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
    ) -> None:
        self.base_url = base_url
        self.models = tuple(models)
        self.defaults = RequestDefaults(thinking, reasoning_effort)
        self._headers = {
            "authorization": f"Bearer {api_key}",
            "content-type": "application/json",
            "accept": "text/event-stream",
            "user-agent": USER_AGENT,
        }
        self._client = client
        self._owns_client = client is None
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

    async def aclose(self) -> None:
        """Refuse new streams and close the owned HTTP client (idempotent)."""
        self._closed = True
        client, self._client = self._client, None
        if client is not None and self._owns_client:
            await client.aclose()

    def _http(self) -> httpx.AsyncClient:
        if self._closed:
            raise LlmError("this DeepSeekAdapter is closed: create a new one (or reload llm-deepseek)", "CLOSED")
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=DEFAULT_TIMEOUT)
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
        """One streaming call; see the module docstring for failures and cancellation."""
        body = serialize_request(options, self.defaults)
        content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        signal = options.signal
        if signal is not None:
            signal.throw_if_aborted()
        client = self._http()
        exchange = _Exchange(client, self._request(client, content), signal)
        try:
            async with (
                aclosing(parse_sse(exchange.body())) as payloads,
                aclosing(translate(payloads)) as chunks,
            ):
                async for chunk in chunks:
                    yield chunk
        finally:
            await exchange.aclose()
