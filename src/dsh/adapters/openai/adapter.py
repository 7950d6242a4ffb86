"""The OpenAI-compatible adapter: one streaming chat-completions call per ``stream()`` through the SDK.

``OpenAIAdapter.stream`` sends :func:`~dsh.adapters.openai.request.build_request`'s call
with ``openai.AsyncOpenAI(...).chat.completions.create(stream=True)`` (retries off) and
translates the SDK's chunks with :class:`~dsh.adapters.openai.translate.ChunkTranslator`.

Failures are reported in band, never raised mid-stream: the stream ends with ``usage``
(if any arrived) then ``finish {"kind": "error", "message", "code"}`` (codes in
:mod:`dsh.adapters.openai.failure`), and a stream that ends without a finish reason
ends with ``STREAM_CLOSED``. Only misuse raises, on first iteration: a ``prefill``
option (``UNSUPPORTED``) or a closed adapter (``CLOSED``).

Cancellation: the SDK call runs in a pump task owned by the stream. An options signal
that has already fired yields ``finish {"kind": "aborted"}`` without any request. When
it fires later -- while connecting, waiting for headers or stalled in a body read --
the pump is cancelled at once, which closes the upstream response, and the stream
ends with ``usage`` (if any) and ``finish aborted``. The consumer's ``aclose()`` and
task cancellation stop the pump the same way; the stream returns only once the pump
is gone, so no response outlives it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import cast

import openai
from openai.types.chat import ChatCompletionChunk, ChatCompletionMessageParam

from dsh.adapters.openai.failure import request_failure, stream_failure
from dsh.adapters.openai.request import ChatRequest, Reasoning, build_request
from dsh.adapters.openai.translate import ChunkTranslator
from dsh.core.errors import LlmError
from dsh.core.llm import AbortedFinish, ErrorFinish, FinishChunk, GenerateOptions, LlmAdapter, StreamChunk
from dsh.core.redact import register_secret
from dsh.kernel import AbortSignal

PUBLIC_BASE_URL = "https://api.deepseek.com"
"""The default endpoint (DeepSeek's public API)."""

DEFAULT_MODELS: tuple[str, ...] = ("deepseek-v4-flash", "deepseek-v4-pro")
"""The model names served when the config lists none (sent verbatim as the request ``model``)."""

DEFAULT_TIMEOUT = openai.Timeout(300.0, connect=30.0)
"""A 30 s connect limit; reads, writes and the pool may wait 300 s (thinking can be slow)."""


@dataclass(frozen=True)
class _Failed:
    reason: ErrorFinish


_ABORTED = AbortedFinish()

_END = object()
"""The pump's marker: the SDK stream ended (or the signal fired: see ``_Call.aborted``)."""


async def _open(client: openai.AsyncOpenAI, request: ChatRequest) -> openai.AsyncStream[ChatCompletionChunk]:
    omit = openai.omit
    return await client.chat.completions.create(
        model=request.model,
        # Our message dicts carry provider keys (reasoning_content) the SDK types lack; it forwards them.
        messages=cast("list[ChatCompletionMessageParam]", request.messages),
        stream=True,
        stream_options={"include_usage": True},
        tools=request.tools if request.tools is not None else omit,
        temperature=request.temperature if request.temperature is not None else omit,
        max_tokens=request.max_tokens if request.max_tokens is not None else omit,
        stop=request.stop if request.stop is not None else omit,
        extra_body=request.extra_body,
    )


class _Call:
    """One SDK call, run by a pump task that hands the SDK's chunks to the consumer.

    The pump owns the SDK stream from start to end: it sends the request, puts every
    chunk into an unbounded queue (then a failure or the end marker) and always closes
    the stream. Stopping -- an abort, the consumer's ``aclose()``, task cancellation --
    cancels the pump once; the cancellation unwinds the SDK call in progress, whose
    own cleanup closes the response. Because the pump is always either awaiting the
    SDK or done, the SDK's generators are never left suspended half-way.
    """

    def __init__(self, client: openai.AsyncOpenAI, request: ChatRequest, signal: AbortSignal | None) -> None:
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._stopped = False
        self.aborted = False
        self._pump = asyncio.ensure_future(self._run(client, request))
        self._unhook = signal.add_callback(self._on_abort) if signal is not None else None

    def _on_abort(self) -> None:
        self.aborted = True
        self._stop()
        self._queue.put_nowait(_END)  # wake the consumer

    def _stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            self._pump.cancel()

    async def _run(self, client: openai.AsyncOpenAI, request: ChatRequest) -> None:
        try:
            stream = await _open(client, request)
        except Exception as error:
            self._queue.put_nowait(_Failed(request_failure(error)))
            return
        outcome: object
        try:
            async for chunk in stream:
                self._queue.put_nowait(chunk)
        except Exception as error:
            outcome = _Failed(stream_failure(error))
        else:
            outcome = _END
        finally:
            await stream.close()
        self._queue.put_nowait(outcome)  # only once the response is closed

    async def next(self) -> object:
        """The next SDK chunk, a ``_Failed`` or ``_END``; check :attr:`aborted` before using it."""
        return await self._queue.get()

    async def aclose(self) -> None:
        """Stop the pump (if still running) and wait until it is gone."""
        if self._unhook is not None:
            self._unhook()
        self._stop()
        await asyncio.wait({self._pump})


class OpenAIAdapter(LlmAdapter):
    """Streams chat completions from any OpenAI-compatible endpoint; see the module docstring.

    ``models`` records the names this adapter is meant to serve (the plugin registers
    them); the model of each call is ``options.model``. ``reasoning`` selects thinking
    mode on every request (:func:`~dsh.adapters.openai.request.reasoning_fields`).
    Without ``client`` the adapter creates one ``openai.AsyncOpenAI`` (retries off) on
    first use and owns it; a given client stays the caller's to close, and its own
    base URL and key apply. :meth:`aclose` (or ``async with``) releases the owned
    client; a closed adapter refuses new streams.

    The owned client gets the key and base URL explicitly, so ``$OPENAI_API_KEY`` and
    ``$OPENAI_BASE_URL`` never apply; the SDK's other variables (``$OPENAI_ORG_ID``,
    ``$OPENAI_PROJECT_ID``, ``$OPENAI_CUSTOM_HEADERS``) still add their headers.
    """

    def __init__(
        self,
        api_key: str,
        base_url: str = PUBLIC_BASE_URL,
        *,
        models: Sequence[str] = DEFAULT_MODELS,
        reasoning: Reasoning | None = None,
        client: openai.AsyncOpenAI | None = None,
    ) -> None:
        self.base_url = base_url
        self.models = tuple(models)
        self.reasoning: Reasoning | None = reasoning
        register_secret(api_key)
        self._api_key = api_key
        self._client = client
        self._owns_client = client is None
        self._closed = False

    async def __aenter__(self) -> OpenAIAdapter:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Refuse new streams and close the owned SDK client (idempotent)."""
        self._closed = True
        client, self._client = self._client, None
        if client is not None and self._owns_client:
            await client.close()

    @property
    def client(self) -> openai.AsyncOpenAI:
        """The SDK client calls go through, created on first use; raises ``LlmError`` ``CLOSED`` once closed."""
        if self._closed:
            raise LlmError("this OpenAIAdapter is closed: create a new one (or reload llm-openai)", "CLOSED")
        if self._client is None:
            self._client = openai.AsyncOpenAI(
                api_key=self._api_key, base_url=self.base_url, max_retries=0, timeout=DEFAULT_TIMEOUT
            )
        return self._client

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """One streaming call; see the module docstring for failures and cancellation."""
        request = build_request(options, self.reasoning)
        client = self.client
        signal = options.signal
        if signal is not None and signal.aborted:
            yield FinishChunk(reason=_ABORTED)
            return
        translator = ChunkTranslator()
        call = _Call(client, request, signal)
        try:
            while True:
                item = await call.next()
                if call.aborted:
                    ending = translator.fail(_ABORTED)
                elif item is _END:
                    ending = translator.close()
                elif isinstance(item, _Failed):
                    ending = translator.fail(item.reason)
                else:
                    for chunk in translator.feed(item):
                        yield chunk
                    continue
                for chunk in ending:
                    yield chunk
                return
        finally:
            await call.aclose()
