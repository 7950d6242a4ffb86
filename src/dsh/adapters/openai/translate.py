"""Streamed ``ChatCompletionChunk`` objects to dsh stream chunks (SPEC §2.2).

The SDK builds its chunk models without validating them, so every field is read here
as untrusted: a value of the wrong type counts as absent. Provider extras arrive in
``model_extra`` (``reasoning_content`` on a delta, ``prompt_cache_hit_tokens`` on the
usage).

One stream holds at most one reasoning block and one text block, plus one tool-call
block per wire ``tool_calls[].index``; block indices count up in the order blocks
open. Deltas are emitted as they arrive; the ``block-end`` of every block, the
``usage`` and the ``finish`` wait until the stream has ended with a finish reason,
so a stream that breaks off never claims to have finished. A failure ends the
stream in band: ``usage`` (if any arrived) then ``finish`` error or aborted, without
``block-end`` chunks for the blocks left incomplete.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from openai.types import CompletionUsage
from openai.types.chat import ChatCompletionChunk
from openai.types.chat.chat_completion_chunk import (
    Choice,
    ChoiceDelta,
    ChoiceDeltaToolCall,
    ChoiceDeltaToolCallFunction,
)
from openai.types.completion_usage import PromptTokensDetails

from dsh.core.llm import (
    UNSET,
    BlockEndChunk,
    BlockStartChunk,
    ContentBlock,
    ErrorFinish,
    FinishChunk,
    FinishReason,
    MaxTokensFinish,
    ReasoningBlock,
    ReasoningDeltaChunk,
    StopFinish,
    StreamChunk,
    TextBlock,
    TextDeltaChunk,
    TokenUsage,
    ToolCallBlock,
    ToolCallDeltaChunk,
    ToolCallsFinish,
    UsageChunk,
)

STREAM_CLOSED = ErrorFinish(message="the provider's stream ended without a finish_reason", code="STREAM_CLOSED")
"""The finish of a stream that ended (or broke off) before the model finished."""


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _extra(model: object, name: str) -> object:
    extra = getattr(model, "model_extra", None)
    return extra.get(name) if isinstance(extra, Mapping) else None


def map_finish_reason(reason: str) -> FinishReason:
    """``stop``, ``tool_calls`` and ``length`` map to their kinds; anything else is an in-band error.

    An unknown reason becomes ``ErrorFinish(message="model stopped: <reason>",
    code=<REASON upper-cased>)`` (e.g. ``CONTENT_FILTER``).
    """
    if reason == "stop":
        return _STOP
    if reason == "tool_calls":
        return _TOOL_CALLS
    if reason == "length":
        return _MAX_TOKENS
    return ErrorFinish(message=f"model stopped: {reason}", code=reason.upper())


_STOP = StopFinish()
_TOOL_CALLS = ToolCallsFinish()
_MAX_TOKENS = MaxTokensFinish()


def map_usage(usage: CompletionUsage) -> TokenUsage:
    """Provider usage to disjoint :class:`TokenUsage`.

    Cache hits come from ``prompt_tokens_details.cached_tokens``, else the provider's
    ``prompt_cache_hit_tokens``; cache writes from ``prompt_tokens_details.cache_write_tokens``.
    Both are subtracted from ``prompt_tokens`` (which includes them) and reported as
    ``cache_read_tokens`` / ``cache_write_tokens`` only when greater than 0. Reasoning
    tokens are not reported separately (they are part of ``outputTokens``).
    """
    details = usage.prompt_tokens_details
    details = details if isinstance(details, PromptTokensDetails) else None
    cache_read = _int(details.cached_tokens) if details is not None else None
    if cache_read is None:
        cache_read = _int(_extra(usage, "prompt_cache_hit_tokens"))
    cache_write = _int(details.cache_write_tokens) if details is not None else None
    read = cache_read if cache_read is not None and cache_read > 0 else 0
    write = cache_write if cache_write is not None and cache_write > 0 else 0
    return TokenUsage(
        input_tokens=(_int(usage.prompt_tokens) or 0) - read - write,
        output_tokens=_int(usage.completion_tokens) or 0,
        cache_read_tokens=read or UNSET,
        cache_write_tokens=write or UNSET,
    )


@dataclass
class _Block:
    index: int
    kind: Literal["text", "reasoning", "tool-call"]
    parts: list[str] = field(default_factory=list)
    call_id: str = ""
    name: str = ""

    def assembled(self) -> ContentBlock:
        joined = "".join(self.parts)
        if self.kind == "tool-call":
            return ToolCallBlock(id=self.call_id, name=self.name, arguments=joined)
        if self.kind == "reasoning":
            return ReasoningBlock(text=joined)
        return TextBlock(text=joined)


class ChunkTranslator:
    """The translation state of one stream; see the module docstring.

    Feed each SDK chunk to :meth:`feed`, then end with exactly one of :meth:`close`
    (the SDK stream ended) or :meth:`fail` (it failed or was aborted). Nothing is
    emitted after either.
    """

    def __init__(self) -> None:
        self._blocks: list[_Block] = []
        self._text: _Block | None = None
        self._reasoning: _Block | None = None
        self._tools: dict[int, _Block] = {}
        self._finish: FinishReason | None = None
        self._usage: TokenUsage | None = None

    def _open(self, kind: Literal["text", "reasoning", "tool-call"]) -> _Block:
        block = _Block(len(self._blocks), kind)
        self._blocks.append(block)
        return block

    def feed(self, chunk: object) -> Iterator[StreamChunk]:
        """The chunks one SDK chunk adds; a last ``usage`` and ``finish_reason`` are kept for the end."""
        if not isinstance(chunk, ChatCompletionChunk):
            return
        choices = chunk.choices
        for choice in choices if isinstance(choices, list) else ():
            if isinstance(choice, Choice):
                yield from self._choice(choice)
        usage = chunk.usage
        if isinstance(usage, CompletionUsage):
            self._usage = map_usage(usage)

    def _choice(self, choice: Choice) -> Iterator[StreamChunk]:
        delta = choice.delta
        if isinstance(delta, ChoiceDelta):
            reasoning = _str(_extra(delta, "reasoning_content"))
            if reasoning:
                if self._reasoning is None:
                    self._reasoning = self._open("reasoning")
                    yield BlockStartChunk(index=self._reasoning.index, block_type="reasoning")
                self._reasoning.parts.append(reasoning)
                yield ReasoningDeltaChunk(index=self._reasoning.index, text=reasoning)
            content = _str(delta.content)
            if content:
                if self._text is None:
                    self._text = self._open("text")
                    yield BlockStartChunk(index=self._text.index, block_type="text")
                self._text.parts.append(content)
                yield TextDeltaChunk(index=self._text.index, text=content)
            calls = delta.tool_calls
            for position, call in enumerate(calls if isinstance(calls, list) else ()):
                if isinstance(call, ChoiceDeltaToolCall):
                    yield from self._tool_call(position, call)
        reason = _str(choice.finish_reason)
        if reason is not None:
            self._finish = map_finish_reason(reason)

    def _tool_call(self, position: int, call: ChoiceDeltaToolCall) -> Iterator[StreamChunk]:
        wire_index = _int(call.index)
        key = wire_index if wire_index is not None else position
        block = self._tools.get(key)
        if block is None:
            block = self._tools[key] = self._open("tool-call")
            yield BlockStartChunk(index=block.index, block_type="tool-call")
        call_id = _str(call.id)
        if call_id:
            block.call_id = call_id
        function = call.function
        function = function if isinstance(function, ChoiceDeltaToolCallFunction) else None
        name = _str(function.name) if function is not None else None
        if name:
            block.name = name
        fragment = (_str(function.arguments) if function is not None else None) or ""
        block.parts.append(fragment)
        yield ToolCallDeltaChunk(
            index=block.index, id=block.call_id, name=block.name or UNSET, arguments_delta=fragment
        )

    def close(self) -> Iterator[StreamChunk]:
        """The end of a stream the SDK finished reading.

        With a finish reason seen: a ``block-end`` per block (in open order), ``usage``
        if any arrived (the last one wins), then that ``finish``. Without one, the
        stream broke off: :data:`STREAM_CLOSED` through :meth:`fail`.
        """
        if self._finish is None:
            yield from self.fail(STREAM_CLOSED)
            return
        for block in self._blocks:
            yield BlockEndChunk(index=block.index, block=block.assembled())
        if self._usage is not None:
            yield UsageChunk(usage=self._usage)
        yield FinishChunk(reason=self._finish)

    def fail(self, reason: FinishReason) -> Iterator[StreamChunk]:
        """The end of a failed or aborted stream: ``usage`` if any arrived, then ``finish`` with ``reason``."""
        if self._usage is not None:
            yield UsageChunk(usage=self._usage)
        yield FinishChunk(reason=reason)
