"""The ``llm`` service: a registry of model adapters behind interceptable calls (SPEC §2.5).

Adapters (DeepSeek, any OpenAI-compatible endpoint, a test script) implement one
method, :meth:`LlmAdapter.stream`. Everything else talks to :class:`LlmService`
(``ctx[LLM]``), whose ``stream`` and ``generate`` run through the ``llm/stream`` and
``llm/generate`` waterfalls so plugins can wrap or replace model calls.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Sequence

from dsh.core.errors import LlmError
from dsh.core.llm.assembler import BlockAssembler
from dsh.core.llm.events import LLM_ADAPTER_CHANGE, LLM_GENERATE, LLM_STREAM
from dsh.core.llm.types import ContentBlock, GenerateOptions, GenerateResult, StreamChunk
from dsh.kernel import Context, Effect, Service, ServiceKey

LLM: ServiceKey[LlmService] = ServiceKey("llm")
"""The key of the ``llm`` service: ``ctx[LLM]``, ``inject=["llm"]``."""


class LlmAdapter(ABC):
    """A model provider: turns one request into one stream of chunks.

    ``stream`` returns an async iterator (usually it is an ``async def`` generator)
    that obeys the chunk contract of SPEC §2.2: ``usage`` before ``finish``, nothing
    after ``finish``, tool-call arguments as raw JSON text. It reports failure either
    by raising while iterated (transport, protocol) or in band, by ending with a
    ``FinishChunk`` of ``ErrorFinish`` or ``AbortedFinish``. It must observe ``options.signal``
    promptly, and it releases its resources when the consumer closes the iterator
    early (``aclose()``) or is cancelled.
    """

    @abstractmethod
    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """Start one model call; see the class docstring."""


class LlmService(Service):
    """The ``llm`` service (plugin class, no config): adapters by model name.

    Calls made through a caller's handle (``ctx[LLM]``) act for that caller: an
    adapter registration is an effect of the caller's fiber and vanishes when that
    fiber is disposed.
    """

    def __init__(self, ctx: Context, config: object = None) -> None:
        super().__init__(ctx, LLM)
        self._adapters: dict[str, LlmAdapter] = {}

    def register_adapter(self, models: Sequence[str], adapter: LlmAdapter) -> Effect:
        """Serve ``models`` with ``adapter`` until the returned effect is called.

        All or nothing: if any model is already served (or listed twice) this raises
        ``LlmError`` with code ``DUPLICATE_ADAPTER`` and changes nothing. Emits
        ``llm/adapter-change`` after registering and again after removal; if a change
        listener raises during registration, the registration is rolled back and the
        listener's exception propagates. The effect belongs to the caller's fiber.
        """
        if isinstance(models, str):
            raise TypeError(f'register_adapter takes a list of model names: pass ["{models}"], not a string')
        names = list(models)
        adapters = self._adapters
        ctx = self.ctx

        def body() -> Generator[Callable[[], None], None, None]:
            seen: set[str] = set()
            for model in names:
                if model in adapters:
                    message = f'an adapter for model "{model}" is already registered'
                    raise LlmError(message, "DUPLICATE_ADAPTER")
                if model in seen:
                    raise LlmError(
                        f'model "{model}" is listed twice in one registration: list each model once',
                        "DUPLICATE_ADAPTER",
                    )
                seen.add(model)
            for model in names:
                adapters[model] = adapter

            def unregister() -> None:
                for model in names:
                    adapters.pop(model, None)
                ctx.emit(LLM_ADAPTER_CHANGE)

            yield unregister
            ctx.emit(LLM_ADAPTER_CHANGE)

        return ctx.effect(body, f"llm adapter for {', '.join(names)}")

    def models(self) -> list[str]:
        """The served model names, in registration order (a fresh list)."""
        return list(self._adapters)

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        """Stream one model call through the ``llm/stream`` waterfall.

        The adapter for ``options.model`` is looked up when the chain reaches the
        service. When none is registered the lookup raises ``LlmError`` (code
        ``NO_ADAPTER``) synchronously: from this call itself, unless a listener
        defers ``next()`` into its own iterator, where it then surfaces on iteration.
        A listener that answers without calling ``next()`` needs no adapter. Close
        the iterator (``aclose()``) when abandoning it early.
        """

        def inner() -> AsyncIterator[StreamChunk]:
            adapter = self._adapters.get(options.model)
            if adapter is None:
                raise LlmError(f'no adapter registered for model "{options.model}"', "NO_ADAPTER")
            return adapter.stream(options)

        return self.ctx.waterfall(LLM_STREAM, options, inner=inner)

    async def stream_blocks(self, options: GenerateOptions) -> AsyncGenerator[ContentBlock, None]:
        """Yield the answer's content blocks as soon as each is final, in order.

        A block is yielded once it is closed and every block before it is too;
        blocks still open when the stream ends are assembled and yielded last. The
        sequence always equals ``generate(options).message.content`` for the same
        stream. Errors (``NO_ADAPTER`` included) surface on iteration; closing this
        generator closes the underlying stream.
        """
        assembler = BlockAssembler()
        chunks = self.stream(options)
        try:
            async for chunk in chunks:
                assembler.push(chunk)
                for block in assembler.flush_ready():
                    yield block
        finally:
            await _close(chunks)
        for block in assembler.flush_remaining():
            yield block

    async def generate(self, options: GenerateOptions) -> GenerateResult:
        """Run one model call to completion through the ``llm/generate`` waterfall.

        The default answer drains :meth:`stream` (so ``llm/stream`` listeners apply)
        into a :class:`BlockAssembler`. Raises whatever the stream raises, including
        ``LlmError`` ``NO_ADAPTER``; an in-band ``ErrorFinish`` is
        returned as the result's ``finish``, not raised.
        """

        async def inner() -> GenerateResult:
            assembler = BlockAssembler()
            chunks = self.stream(options)
            try:
                async for chunk in chunks:
                    assembler.push(chunk)
            finally:
                await _close(chunks)
            return assembler.result()

        return await self.ctx.waterfall(LLM_GENERATE, options, inner=inner)


async def _close(chunks: AsyncIterator[StreamChunk]) -> None:
    """Close a chunk iterator that supports it (async generators do)."""
    aclose = getattr(chunks, "aclose", None)
    if aclose is not None:
        await aclose()
