"""A scripted model for tests and demos: answers each model call with the next script entry.

Entries:

* a list of chunks (typed values, or their JSON as dicts: converted once when the
  entry is added, so a bad chunk fails at once with MALFORMED) (see :func:`text_response`, :func:`tool_call_response`,
  :func:`max_tokens_response`, :func:`error_finish`),
* a callable ``(options) -> list of chunks`` (to react to the request),
* :data:`HANG`: stream ``block-start`` and a ``"partial"`` text delta, then wait for
  the request's abort signal and raise,
* :class:`Fail`: raise an error from the stream (optionally after some chunks).

Every request is recorded in :attr:`ScriptedModel.requests`. With ``pace`` set, the
stream sleeps that many seconds before each chunk (to let other tasks run, as a real
network stream would). Asking beyond the
script raises ``LlmError("ScriptedModel: script exhausted ...")``; a test that ends
with entries left should call :meth:`ScriptedModel.assert_consumed`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from dsh.core.errors import HarnessError, LlmError
from dsh.core.llm import (
    AbortedFinish,
    BlockEndChunk,
    BlockStartChunk,
    ErrorFinish,
    FinishChunk,
    FinishReason,
    GenerateOptions,
    LlmAdapter,
    MaxTokensFinish,
    StopFinish,
    StreamChunk,
    TextBlock,
    TextDeltaChunk,
    TokenUsage,
    ToolCallBlock,
    ToolCallDeltaChunk,
    ToolCallsFinish,
    UsageChunk,
    parse_stream_chunk,
)

HANG: Final = "hang"
FinishKind: TypeAlias = Literal["stop", "tool-calls", "max-tokens", "aborted"]

ChunkData: TypeAlias = "StreamChunk | Mapping[str, Any]"
"""A chunk as a script may spell it: the typed value, or its JSON (converted once, checked)."""


def chunks_of(entries: Sequence[ChunkData]) -> tuple[StreamChunk, ...]:
    """``entries`` as typed chunks: JSON-shaped ones are converted (MALFORMED when they do not fit)."""
    return tuple([parse_stream_chunk(entry) if isinstance(entry, Mapping) else entry for entry in entries])


@dataclass(frozen=True, init=False)
class Fail:
    """Raise ``error`` from the stream after yielding ``chunks`` (JSON-shaped ones converted here)."""

    error: BaseException
    chunks: tuple[StreamChunk, ...]

    def __init__(self, error: BaseException, chunks: Sequence[ChunkData] = ()) -> None:
        object.__setattr__(self, "error", error)
        object.__setattr__(self, "chunks", chunks_of(chunks))


ScriptEntry: TypeAlias = "Sequence[ChunkData] | Callable[[GenerateOptions], Sequence[ChunkData]] | str | Fail"
_Stored: TypeAlias = "tuple[StreamChunk, ...] | Callable[[GenerateOptions], Sequence[ChunkData]] | str | Fail"

_FINISHES: Mapping[str, FinishReason] = {
    "stop": StopFinish(),
    "tool-calls": ToolCallsFinish(),
    "max-tokens": MaxTokensFinish(),
    "aborted": AbortedFinish(),
}


def _usage(input_tokens: int, output_tokens: int) -> TokenUsage:
    return TokenUsage(input_tokens=input_tokens, output_tokens=output_tokens)


def text_response(text: str, *, finish: FinishKind = "stop", index: int = 0) -> list[StreamChunk]:
    """One text block streamed a character at a time, usage ``{10, len}``, finish ``finish``."""
    chunks: list[StreamChunk] = [BlockStartChunk(index=index, block_type="text")]
    chunks.extend(TextDeltaChunk(index=index, text=char) for char in text)
    chunks.append(BlockEndChunk(index=index, block=TextBlock(text=text)))
    chunks.append(UsageChunk(usage=_usage(10, len(text))))
    chunks.append(FinishChunk(reason=_FINISHES[finish]))
    return chunks


def max_tokens_response(text: str) -> list[StreamChunk]:
    """Like :func:`text_response` but cut off: finish ``max-tokens``."""
    return text_response(text, finish="max-tokens")


def tool_call_response(
    call_id: str, name: str, arguments: dict[str, Any] | str, text: str | None = None
) -> list[StreamChunk]:
    """Optional text block, then one tool call whose JSON arguments arrive in two deltas."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments, separators=(",", ":"))
    chunks: list[StreamChunk] = []
    index = 0
    if text is not None:
        chunks.extend(text_response(text)[:-2])
        index = 1
    chunks.append(BlockStartChunk(index=index, block_type="tool-call"))
    chunks.append(ToolCallDeltaChunk(index=index, id=call_id, name=name, arguments_delta=raw[:5]))
    chunks.append(ToolCallDeltaChunk(index=index, id=call_id, arguments_delta=raw[5:]))
    chunks.append(BlockEndChunk(index=index, block=ToolCallBlock(id=call_id, name=name, arguments=raw)))
    chunks.append(UsageChunk(usage=_usage(10, 5)))
    chunks.append(FinishChunk(reason=ToolCallsFinish()))
    return chunks


def error_finish(message: str, code: str | None = None) -> list[StreamChunk]:
    """A stream that ends in-band with ``finish {kind: error}``."""
    reason = ErrorFinish(message=message) if code is None else ErrorFinish(message=message, code=code)
    return [FinishChunk(reason=reason)]


def _typed(entry: ScriptEntry) -> _Stored:
    """A script entry with its JSON-shaped chunks converted (callables convert when called)."""
    if isinstance(entry, str | Fail) or callable(entry):
        return entry
    return chunks_of(entry)


class ScriptedModel(LlmAdapter):
    """An :class:`LlmAdapter` that plays a script; see the module docstring."""

    def __init__(self, script: Sequence[ScriptEntry] = (), *, pace: float | None = None) -> None:
        self._script: list[_Stored] = [_typed(entry) for entry in script]
        self._pace = pace
        self._cursor = 0
        self.requests: list[GenerateOptions] = []

    def push(self, *entries: ScriptEntry) -> None:
        """Append entries to the script."""
        self._script.extend(_typed(entry) for entry in entries)

    @property
    def remaining(self) -> int:
        return len(self._script) - self._cursor

    def assert_consumed(self) -> None:
        """Raise ``AssertionError`` if script entries were never asked for."""
        if self.remaining:
            raise AssertionError(f"ScriptedModel: {self.remaining} script entries were never consumed")

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        self.requests.append(options)
        index = self._cursor
        self._cursor += 1
        return self._play(index, options)

    async def _play(self, index: int, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        signal = options.signal
        if index >= len(self._script):
            raise LlmError(
                f"ScriptedModel: script exhausted (model call #{index + 1}, script has {len(self._script)})",
                "SCRIPT_EXHAUSTED",
            )
        entry = self._script[index]
        if entry == HANG:
            yield BlockStartChunk(index=0, block_type="text")
            yield TextDeltaChunk(index=0, text="partial")
            if signal is not None:
                await signal.wait()
            else:  # nothing can ever end this wait but cancellation
                await asyncio.Event().wait()
            raise HarnessError("aborted", "ABORTED")
        if isinstance(entry, Fail):
            for chunk in entry.chunks:
                yield chunk
            raise entry.error
        if isinstance(entry, str):
            raise HarnessError(f"ScriptedModel: unknown script entry {entry!r}", "BAD_SCRIPT")
        chunks = chunks_of(entry(options)) if callable(entry) else entry
        for chunk in chunks:
            if self._pace is not None:
                await asyncio.sleep(self._pace)
            if signal is not None and signal.aborted:
                raise HarnessError(str(signal.reason), "ABORTED")
            yield chunk
