"""The DeepSeek adapter: one streaming chat-completions call per ``stream()`` (SPEC §10).

``DeepSeekAdapter.stream`` posts the serialized request to ``{base_url}/chat/completions``
and turns the event stream into chunks. Failures raise ``LlmError`` while iterating:

* a non-2xx answer: the body's ``error.message`` (else ``DeepSeek API error (HTTP <n>)``)
  with code :func:`http_error_code`, ``status`` and the ``Retry-After`` delay as ``retry_after``;
  a 400 whose message says the request exceeds the context window has code
  ``CONTEXT_WINDOW_EXCEEDED`` (:func:`~dsh.core.errors.is_context_window_exceeded`);
* a 2xx answer whose body is empty: ``EMPTY_RESPONSE``;
* a transport failure while reading the body (reset, cut-off chunked framing, a read
  timeout), or a body that ends before ``[DONE]``: ``STREAM_CLOSED`` (the
  ``aiohttp.ClientError`` is the ``cause``);
* a transport failure before the answer arrives (refused connection, DNS, invalid URL,
  timeout, proxy, TLS) or TLS that cannot be set up (a bad ``SSL_CERT_FILE``): ``NETWORK``,
  naming the URL and where to fix it;
* a malformed payload: ``MALFORMED_RESPONSE``; a ``prefill`` option: ``UNSUPPORTED``.

HTTP is one ``aiohttp.ClientSession`` per adapter (see
:mod:`dsh.adapters.deepseek.transport`). A connect task owned by the stream sends the
request and waits for the answer's head; from then on the consumer reads the body
itself, one piece per wake-up, parsing and translating each piece as it arrives into a
batch of chunks (no task in between: a piece costs one wake-up, not two).

Connection reuse: aiohttp returns a connection to the pool when its body has been read
to the end. Once the outcome of a stream is known (``[DONE]`` or a malformed payload),
closing the stream reads the rest of the body -- normally just the chunked terminator,
already there -- for at most ``drain_timeout`` seconds, then *closes* the response,
which drops the connection unless the body was complete: a half-read connection is
never pooled.

Read bound: each wait of the answer -- for the head, then for each piece of the body --
may last at most ``read_timeout`` seconds (:data:`READ_TIMEOUT`); a longer one fails the
stream: ``NETWORK`` before the head arrived, ``STREAM_CLOSED`` (its cause a
``TimeoutError``) after. The bound is the exchange's own, not aiohttp's ``sock_read``
(which re-arms a timer for every piece read): the exchange notes the loop clock when a
wait starts and keeps one timer, re-armed only when it fires. A caller's session keeps
its own timeouts on top.

Cancellation: the options' abort signal stops the exchange at once -- while connecting,
waiting for the head, stalled in a body read or draining: it cancels the connect task or
closes the response (which wakes a pending read) -- and the iteration raises the
kernel's ``AbortError`` carrying the signal's reason. The consumer's early ``aclose()``
and task cancellation end the exchange the same way, and the stream returns only after
the connect task ended and the response was closed, so a cancelled stream never holds a
pooled connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

from dsh.adapters.deepseek.serialize import ReasoningEffort, RequestDefaults, Thinking, encode_request
from dsh.adapters.deepseek.sse import SseParser
from dsh.adapters.deepseek.translate import StreamTranslator
from dsh.adapters.deepseek.transport import (
    READ_TIMEOUT,
    env_proxy,
    load_ssl_context,
    network_error,
    new_session,
    warm_up,
)
from dsh.core.errors import CONTEXT_WINDOW_EXCEEDED, LlmError, is_context_window_exceeded, retry_after_seconds
from dsh.core.llm import GenerateOptions, LlmAdapter, StreamChunk
from dsh.core.redact import redact_secrets, register_secret
from dsh.kernel import AbortError, AbortSignal

if TYPE_CHECKING:
    import aiohttp
    from yarl import URL

Proxy = tuple["URL | None", "dict[str, str] | None"]
"""A request's proxy and the headers for it (``(None, None)``: the session decides)."""

TlsSetup = Callable[[], Awaitable[ssl.SSLContext]]
"""How a connect task gets the TLS context of an ``https`` request."""

PUBLIC_BASE_URL = "https://api.deepseek.com"
"""The provider's public endpoint (the default base URL)."""

USER_AGENT = "deepseek-harness/0.0.1"
"""The ``user-agent`` header of every request."""

DEFAULT_MODELS: tuple[str, ...] = ("deepseek-v4-flash", "deepseek-v4-pro")
"""The model names served when the config lists none (sent verbatim as the wire ``model``)."""

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


async def _api_error(response: aiohttp.ClientResponse) -> LlmError:
    from aiohttp import ClientError

    status = response.status
    message = f"DeepSeek API error (HTTP {status})"
    try:
        parsed = json.loads(await response.read())
    except (ClientError, ValueError):
        parsed = None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    detail = error.get("message") if isinstance(error, dict) else None
    code = http_error_code(status)
    if isinstance(detail, str):
        message = redact_secrets(detail)
        if status == 400 and is_context_window_exceeded(detail):
            code = CONTEXT_WINDOW_EXCEEDED
    return LlmError(message, code, status, retry_after=retry_after_seconds(response.headers))


def _stream_closed(cause: Exception | None = None) -> LlmError:
    return LlmError("SSE stream ended without [DONE]", "STREAM_CLOSED", cause=cause)


class _Exchange:
    """One HTTP exchange: a connect task gets the answer's head, the consumer reads the body.

    The connect task sends the request and waits for the head (an error status is read
    and failed there, its response closed). From the head on, the consumer reads the
    body itself in :meth:`take`: one wake-up per piece read, which it parses and
    translates into a batch of chunks. Once the outcome is known -- the end, or a failure
    -- the exchange is *settled*; :meth:`aclose` then drains the rest of a body whose
    outcome came from the body itself (bounded by the drain timeout) before it closes the
    response, so the connection goes back to the pool.

    Stopping -- an abort, the consumer's ``aclose()`` before the stream settled, task
    cancellation -- cancels the connect task (which unwinds the HTTP call in progress)
    or closes the response (which wakes a pending read with a connection error), so no
    connection outlives the stream: :meth:`aclose` waits for the connect task and always
    closes the response. Closing the response awaits nothing, so no cancellation can
    land half-way through it.
    """

    def __init__(
        self,
        session: aiohttp.ClientSession,
        tls: TlsSetup | None,
        proxy: Proxy,
        url: str,
        headers: dict[str, str],
        content: bytes,
        signal: AbortSignal | None,
        drain_timeout: float,
        read_timeout: float,
    ) -> None:
        self._ready: list[StreamChunk] = []
        self._failure: Exception | None = None
        self._ended = False
        self._settled = False
        self._abort: AbortError | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._response: aiohttp.ClientResponse | None = None
        self._signal = signal
        self._received = False
        self._reading = False
        self._parser = SseParser()
        self._translator = StreamTranslator()
        self._drain_timeout = drain_timeout
        self._url = url
        loop = asyncio.get_running_loop()
        self._clock = loop.time
        self._read_timeout = read_timeout
        self._waited_from = loop.time()
        self._bound = loop.call_at(self._waited_from + read_timeout, self._check_bound)
        self._connect = asyncio.ensure_future(self._run(session, tls, proxy, url, headers, content))
        self._unhook = signal.add_callback(self._on_abort) if signal is not None else None

    # ------------------------------------------------------------------ consumer side
    @property
    def abort(self) -> AbortError | None:
        """The ``AbortError`` to raise once the signal fired, else None."""
        return self._abort

    async def take(self) -> list[StreamChunk]:
        """The chunks of the next piece of the body (reading it); ``[]`` once the stream ended.

        Raises the failure after the chunks that preceded it, or ``AbortError`` as soon
        as the signal fired.
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
            response = self._response
            if response is None:  # the head is on its way
                waiter = self._waiter = asyncio.get_running_loop().create_future()
                await waiter
            else:
                await self._read(response)

    async def _read(self, response: aiohttp.ClientResponse) -> None:
        """Read one piece of the body and translate it (a failure is kept for :meth:`take`)."""
        from aiohttp import ClientError

        self._waited_from = self._clock()
        self._reading = True
        try:
            data = await response.content.readany()
        except ClientError as error:  # cut off, or closed by an abort or the read bound
            self._fail(_stream_closed(error))
            return
        finally:
            self._reading = False
        if data:
            self._feed(data)
        else:
            self._finish()

    async def aclose(self) -> None:
        """Stop the connect task, drain a body whose outcome is known, close the response."""
        try:
            if not self._connect.done():
                self._connect.cancel()
                try:
                    await asyncio.wait((self._connect,))
                except asyncio.CancelledError:  # cancelled again while it unwinds: still let it end first
                    await asyncio.wait((self._connect,))
                    raise
            response = self._response
            if response is not None:
                self._response = None
                try:
                    if self._settled and self._abort is None and not response.content.at_eof():
                        await self._drain(response)
                finally:
                    response.close()  # awaits nothing; drops the connection unless the body was read to its end
        finally:
            self._bound.cancel()
            if self._unhook is not None:
                self._unhook()

    async def _drain(self, response: aiohttp.ClientResponse) -> None:
        """Read the rest of a settled body (normally the chunked terminator), bounded in time.

        Whatever goes wrong here is not the stream's outcome: it only costs the connection.
        """
        with contextlib.suppress(Exception):
            async with asyncio.timeout(self._drain_timeout):
                while await response.content.readany():
                    pass

    # --------------------------------------------------------------------- callbacks
    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():  # the consumer may have been cancelled while waiting
                waiter.set_result(None)

    def _on_abort(self) -> None:
        assert self._signal is not None
        self._abort = AbortError(self._signal.reason)
        self._interrupt()

    def _interrupt(self) -> None:
        """Unwind what is in progress: the connect task, or a pending read (by closing the response)."""
        self._connect.cancel()
        if self._response is not None:
            self._response.close()  # a read waiting on it fails with a connection error
        self._wake()

    def _check_bound(self) -> None:
        """The read bound's timer: fail a wait longer than ``read_timeout``, else re-arm."""
        if self._settled:
            return
        now = self._clock()
        waiting = self._response is None or self._reading  # no head yet, or a read in progress
        due = self._waited_from + self._read_timeout if waiting else now + self._read_timeout
        if now < due:
            self._bound = asyncio.get_running_loop().call_at(due, self._check_bound)
            return
        waited = f"no data for {self._read_timeout:g} s"
        if self._response is not None:
            error = LlmError(f"DeepSeek API stream stalled: {waited}", "STREAM_CLOSED", cause=TimeoutError(waited))
        else:
            error = LlmError(
                f"DeepSeek API request to {self._url} got no answer: {waited} "
                "(check baseURL / $DEEPSEEK_BASE_URL and the network)",
                "NETWORK",
                cause=TimeoutError(waited),
            )
        self._fail(error)
        self._interrupt()

    def _fail(self, error: Exception) -> None:
        if not self._settled:
            self._settled = True
            self._failure = error
            self._wake()

    def _end(self) -> None:
        self._settled = self._ended = True

    async def _run(
        self,
        session: aiohttp.ClientSession,
        tls: TlsSetup | None,
        proxy: Proxy,
        url: str,
        headers: dict[str, str],
        content: bytes,
    ) -> None:
        """The connect task: send the request and wait for the head; an error status fails here."""
        from aiohttp import ClientError

        try:
            context: ssl.SSLContext | bool = await tls() if tls is not None else True
            try:
                response = await session.post(
                    url, headers=headers, data=content, ssl=context, proxy=proxy[0], proxy_headers=proxy[1]
                )
            except ClientError as error:
                raise network_error(url, error) from error
            if not 200 <= response.status < 300:
                try:
                    raise await _api_error(response)
                finally:
                    response.close()
            self._response = response
            self._wake()
        except Exception as error:
            self._fail(error)

    def _feed(self, data: bytes) -> None:
        """Parse and translate one (non-empty) piece of the body into :attr:`_ready`."""
        self._received = True
        payloads = self._parser.feed(data)
        if not payloads:
            return
        ready = self._ready
        try:
            for payload in payloads:
                if self._translator.feed(payload, ready):
                    self._end()
                    return
        except LlmError as error:  # a malformed payload: the chunks before it, then the error
            self._fail(error)

    def _finish(self) -> None:
        """The body ended: translate a final event left without its blank line, or fail."""
        if not self._received:
            self._fail(LlmError("DeepSeek API returned no response body", "EMPTY_RESPONSE"))
            return
        for payload in self._parser.finish():
            self._translator.feed(payload, self._ready)
        if not self._parser.done:
            self._fail(_stream_closed())
            return
        self._end()


class DeepSeekAdapter(LlmAdapter):
    """Streams DeepSeek chat completions; see the module docstring.

    ``models`` records the names this adapter is meant to serve (the plugin registers
    them); the model of each call is ``options.model``. ``thinking`` and
    ``reasoning_effort`` are sent on every request when set. ``drain_timeout`` bounds
    the read of a body's tail after ``[DONE]``, ``read_timeout`` each wait for the head or a
    piece of the body (see the module docstring). Each request
    body is built and encoded from the options by
    :func:`~dsh.adapters.deepseek.serialize.encode_request`.

    Without ``session`` the adapter owns one ``aiohttp.ClientSession``, created on the
    first stream (:func:`~dsh.adapters.deepseek.transport.new_session`:
    :data:`CONNECT_TIMEOUT`), and sends through the proxy the
    environment names for its URL at that moment
    (:func:`~dsh.adapters.deepseek.transport.env_proxy`). A given session stays the
    caller's to close, and its own timeouts and proxy settings apply. Either way ``https``
    requests verify against :func:`~dsh.adapters.deepseek.transport.load_ssl_context`,
    built once (:meth:`prepare` starts that, and the aiohttp import, in a worker thread). :meth:`aclose` (or
    ``async with``) closes the owned session; a closed adapter refuses new streams.
    """

    def __init__(
        self,
        api_key: str,
        base_url: str = PUBLIC_BASE_URL,
        *,
        models: Sequence[str] = DEFAULT_MODELS,
        thinking: Thinking | None = None,
        reasoning_effort: ReasoningEffort | None = None,
        session: aiohttp.ClientSession | None = None,
        drain_timeout: float = DRAIN_TIMEOUT,
        read_timeout: float = READ_TIMEOUT,
    ) -> None:
        register_secret(api_key)
        self.base_url = base_url
        self.models = tuple(models)
        self.defaults = RequestDefaults(thinking, reasoning_effort)
        self.drain_timeout = drain_timeout
        self.read_timeout = read_timeout
        self._headers = {
            "authorization": f"Bearer {api_key}",
            "content-type": "application/json",
            "accept": "text/event-stream",
            "accept-encoding": "identity",
            "user-agent": USER_AGENT,
        }
        self._session = session
        self._owns_session = session is None
        self._proxy: Proxy = (None, None)
        self._tls = self._ssl_context if base_url.lower().startswith("https:") else None
        self._ssl: ssl.SSLContext | None = None
        self._preparing: asyncio.Future[ssl.SSLContext | None] | None = None
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
        """Import aiohttp in a worker thread, building the TLS context there too for an ``https`` base URL.

        Call it on the event loop. Importing aiohttp and loading a CA bundle take tens of
        milliseconds each: starting them when the plugin loads overlaps them with the
        rest of the boot instead of delaying the first request. A bundle that cannot be
        loaded fails the first call instead (``NETWORK``). Idempotent; does nothing once
        closed.
        """
        if self._closed or self._preparing is not None:
            return
        self._preparing = asyncio.ensure_future(asyncio.to_thread(warm_up, self.url, self._tls is not None))

    async def _ssl_context(self) -> ssl.SSLContext:
        """The TLS context: the prepared one, else built now; a failed build is tried again by the next call."""
        if self._ssl is None:
            preparing, self._preparing = self._preparing, None
            if preparing is not None:
                with contextlib.suppress(LlmError):  # built again below, so the error is this call's
                    self._ssl = await preparing
            if self._ssl is None:
                self._ssl = load_ssl_context(self.url)
        return self._ssl

    async def aclose(self) -> None:
        """Refuse new streams and close the owned session, waiting for :meth:`prepare`'s thread (idempotent)."""
        self._closed = True
        session, self._session = self._session, None
        preparing, self._preparing = self._preparing, None
        if preparing is not None:
            with contextlib.suppress(Exception):  # a failed setup is reported by the call that needs it
                await preparing
        if session is not None and self._owns_session:
            await session.close()

    def _http(self) -> aiohttp.ClientSession:
        if self._closed:
            raise LlmError("this DeepSeekAdapter is closed: create a new one (or reload llm-deepseek)", "CLOSED")
        if self._session is None:
            self._session = new_session()
            proxy, authorization = env_proxy(self.url)
            self._proxy = (proxy, None)
            if authorization is not None and self._tls is None:  # the proxy reads it off the forwarded request
                self._headers = {**self._headers, "proxy-authorization": authorization}
            elif authorization is not None:  # https: it goes on the CONNECT request only
                self._proxy = (proxy, {"proxy-authorization": authorization})
        return self._session

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """One streaming call; see the module docstring for failures, connection reuse and cancellation."""
        content = encode_request(options, self.defaults)
        signal = options.signal
        if signal is not None:
            signal.throw_if_aborted()
        session = self._http()
        exchange = _Exchange(
            session,
            self._tls,
            self._proxy,
            self.url,
            self._headers,
            content,
            signal,
            self.drain_timeout,
            self.read_timeout,
        )
        try:
            while batch := await exchange.take():
                for chunk in batch:
                    if exchange.abort is not None:  # aborted while the consumer held this batch
                        raise exchange.abort
                    yield chunk
        finally:
            await exchange.aclose()
