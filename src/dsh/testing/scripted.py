"""A scripted model for tests and demos: answers each model call with the next script entry.

Entries:

* a list of chunks (see :func:`text_response`, :func:`tool_call_response`,
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
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from dsh.core.errors import HarnessError, LlmError
from dsh.core.llm import ErrorFinish, FinishReason, GenerateOptions, LlmAdapter, StreamChunk, TokenUsage

HANG: Final = "hang"
FinishKind: TypeAlias = Literal["stop", "tool-calls", "max-tokens", "aborted"]


@dataclass(frozen=True)
class Fail:
    """Raise ``error`` from the stream after yielding ``chunks``."""

    error: BaseException
    chunks: Sequence[StreamChunk] = field(default_factory=tuple)


ScriptEntry: TypeAlias = "Sequence[StreamChunk] | Callable[[GenerateOptions], Sequence[StreamChunk]] | str | Fail"


def _usage(input_tokens: int, output_tokens: int) -> TokenUsage:
    return {"inputTokens": input_tokens, "outputTokens": output_tokens}


def text_response(text: str, *, finish: FinishKind = "stop", index: int = 0) -> list[StreamChunk]:
    """One text block streamed a character at a time, usage ``{10, len}``, finish ``finish``."""
    chunks: list[StreamChunk] = [{"type": "block-start", "index": index, "blockType": "text"}]
    chunks.extend({"type": "text-delta", "index": index, "text": char} for char in text)
    chunks.append({"type": "block-end", "index": index, "block": {"type": "text", "text": text}})
    chunks.append({"type": "usage", "usage": _usage(10, len(text))})
    reason: FinishReason = {"kind": finish}  # type: ignore[misc, assignment]
    chunks.append({"type": "finish", "reason": reason})
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
    chunks.append({"type": "block-start", "index": index, "blockType": "tool-call"})
    chunks.append({"type": "tool-call-delta", "index": index, "id": call_id, "name": name, "argumentsDelta": raw[:5]})
    chunks.append({"type": "tool-call-delta", "index": index, "id": call_id, "argumentsDelta": raw[5:]})
    chunks.append(
        {
            "type": "block-end",
            "index": index,
            "block": {"type": "tool-call", "id": call_id, "name": name, "arguments": raw},
        }
    )
    chunks.append({"type": "usage", "usage": _usage(10, 5)})
    chunks.append({"type": "finish", "reason": {"kind": "tool-calls"}})
    return chunks


def error_finish(message: str, code: str | None = None) -> list[StreamChunk]:
    """A stream that ends in-band with ``finish {kind: error}``."""
    reason: ErrorFinish = {"kind": "error", "message": message}
    if code is not None:
        reason["code"] = code
    return [{"type": "finish", "reason": reason}]


class ScriptedModel(LlmAdapter):
    """An :class:`LlmAdapter` that plays a script; see the module docstring."""

    def __init__(self, script: Sequence[ScriptEntry] = (), *, pace: float | None = None) -> None:
        self._script: list[ScriptEntry] = list(script)
        self._pace = pace
        self._cursor = 0
        self.requests: list[GenerateOptions] = []

    def push(self, *entries: ScriptEntry) -> None:
        """Append entries to the script."""
        self._script.extend(entries)

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
            yield {"type": "block-start", "index": 0, "blockType": "text"}
            yield {"type": "text-delta", "index": 0, "text": "partial"}
            if signal is not None:
                await signal.wait()
            else:  # nothing can ever end this wait but cancellation
                await asyncio.Event().wait()
            raise HarnessError("aborted", "ABORTED")
        if isinstance(entry, Fail):
            for chunk in entry.chunks:
                yield chunk
            raise entry.error
        chunks = entry(options) if callable(entry) else entry
        if isinstance(chunks, str):
            raise HarnessError(f"ScriptedModel: unknown script entry {chunks!r}", "BAD_SCRIPT")
        for chunk in chunks:
            if self._pace is not None:
                await asyncio.sleep(self._pace)
            if signal is not None and signal.aborted:
                raise HarnessError(str(signal.reason), "ABORTED")
            yield chunk
