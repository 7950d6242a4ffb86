"""Chunk builders and scripted adapters for the llm tests (the only fakes: the model)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from dsh.core.llm import (
    UNSET,
    BlockEndChunk,
    BlockStartChunk,
    ContentBlock,
    FinishChunk,
    FinishReason,
    GenerateOptions,
    LlmAdapter,
    Message,
    ReasoningDeltaChunk,
    StopFinish,
    StreamChunk,
    TextDeltaChunk,
    TokenUsage,
    ToolCallDeltaChunk,
    UsageChunk,
    parse_content_block,
    parse_finish_reason,
)


def start(index: int, block_type: str) -> BlockStartChunk:
    return BlockStartChunk(index=index, block_type=block_type)


def text_delta(index: int, text: str) -> TextDeltaChunk:
    return TextDeltaChunk(index=index, text=text)


def reasoning_delta(index: int, text: str) -> ReasoningDeltaChunk:
    return ReasoningDeltaChunk(index=index, text=text)


def tool_delta(index: int, call_id: str, arguments: str, name: str | None = None) -> ToolCallDeltaChunk:
    return ToolCallDeltaChunk(index=index, id=call_id, name=UNSET if name is None else name, arguments_delta=arguments)


def end(index: int, block: ContentBlock | dict[str, Any]) -> BlockEndChunk:
    """A ``block-end``; ``block`` is a block value or its JSON (decoded like a provider's)."""
    return BlockEndChunk(index=index, block=parse_content_block(block) if isinstance(block, dict) else block)


def usage(input_tokens: int, output_tokens: int) -> UsageChunk:
    return UsageChunk(usage=TokenUsage(input_tokens=input_tokens, output_tokens=output_tokens))


def finish(reason: FinishReason | dict[str, Any] | None = None) -> FinishChunk:
    """A ``finish``; ``reason`` is a value, its JSON, or None for ``stop``."""
    if reason is None:
        return FinishChunk(reason=StopFinish())
    return FinishChunk(reason=parse_finish_reason(reason) if isinstance(reason, dict) else reason)


def options(model: str = "m1", messages: list[Message] | None = None) -> GenerateOptions:
    return GenerateOptions(model=model, messages=messages if messages is not None else [])


class ScriptedAdapter(LlmAdapter):
    """Streams the same chunk script on every call.

    ``calls`` records each call's options; ``pulled`` counts chunks handed out so
    far (a consumer's progress); ``closed`` counts streams whose generator ended
    (exhausted, closed early, or failed); ``error`` is raised after the script.
    """

    def __init__(self, chunks: Sequence[StreamChunk], error: BaseException | None = None) -> None:
        self.chunks = list(chunks)
        self.error = error
        self.calls: list[GenerateOptions] = []
        self.pulled = 0
        self.closed = 0

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        self.calls.append(options)
        try:
            for chunk in self.chunks:
                self.pulled += 1
                yield chunk
            if self.error is not None:
                raise self.error
        finally:
            self.closed += 1


class ChunkIterator:
    """A plain async iterator over chunks (no ``aclose``), as a hand-written adapter may return."""

    def __init__(self, chunks: Sequence[StreamChunk]) -> None:
        self._chunks = iter(list(chunks))

    def __aiter__(self) -> ChunkIterator:
        return self

    async def __anext__(self) -> StreamChunk:
        try:
            return next(self._chunks)
        except StopIteration:
            raise StopAsyncIteration from None


class IteratorAdapter(LlmAdapter):
    """An adapter whose stream is a :class:`ChunkIterator`, not an async generator."""

    def __init__(self, chunks: Sequence[StreamChunk]) -> None:
        self.chunks = list(chunks)

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        return ChunkIterator(self.chunks)
