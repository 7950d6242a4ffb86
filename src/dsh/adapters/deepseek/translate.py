"""DeepSeek stream payloads to dsh stream chunks (SPEC §10, translation).

One stream holds at most one reasoning block and one text block, plus one tool-call
block per wire ``tool_calls[].index``; block indices count up in the order blocks
open. Every ``block-end``, the ``usage`` and the ``finish`` wait for ``[DONE]``, so a
stream that breaks off never claims to have finished.

Each payload is decoded once, by ``msgspec``, keeping only ``choices`` and ``usage``
(the members the translation reads); their contents are untrusted JSON, and a value
of the wrong type counts as absent. The chunks out are the typed vocabulary.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable, Mapping
from typing import Any, Literal

import msgspec

from dsh.adapters.deepseek.sse import DONE as DONE
from dsh.core.errors import LlmError
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


_EMPTY: Mapping[str, Any] = {}


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else _EMPTY


def map_usage(usage: Mapping[str, Any]) -> TokenUsage:
    """Wire usage to disjoint :class:`TokenUsage`.

    Cache hits come from ``prompt_tokens_details.cached_tokens``, else
    ``prompt_cache_hit_tokens``; they are subtracted from ``prompt_tokens`` and reported
    as ``cache_read_tokens`` (even when 0). ``reasoning_tokens`` comes from
    ``completion_tokens_details.reasoning_tokens``. Absent wire fields stay ``UNSET``.
    """
    cache_read = _mapping(usage.get("prompt_tokens_details")).get("cached_tokens")
    if cache_read is None:
        cache_read = usage.get("prompt_cache_hit_tokens")
    reasoning = _mapping(usage.get("completion_tokens_details")).get("reasoning_tokens")
    return TokenUsage(
        input_tokens=(usage.get("prompt_tokens") or 0) - (cache_read or 0),
        output_tokens=usage.get("completion_tokens") or 0,
        cache_read_tokens=cache_read if cache_read is not None else UNSET,
        reasoning_tokens=reasoning if reasoning is not None else UNSET,
    )


class _Block:
    """One open block: its index, kind and the fragments streamed so far."""

    __slots__ = ("call_id", "index", "kind", "name", "parts")

    def __init__(self, index: int, kind: Literal["text", "reasoning", "tool-call"]) -> None:
        self.index = index
        self.kind = kind
        self.parts: list[str] = []
        self.call_id = ""
        self.name = ""

    def assembled(self) -> ContentBlock:
        joined = "".join(self.parts)
        if self.kind == "tool-call":
            return ToolCallBlock(id=self.call_id, name=self.name, arguments=joined)
        if self.kind == "reasoning":
            return ReasoningBlock(text=joined)
        return TextBlock(text=joined)


class _Payload(msgspec.Struct):
    """The two members of a wire chunk the translation reads, each still untrusted JSON."""

    choices: Any = None
    usage: Any = None


_decode_payload = msgspec.json.Decoder(_Payload).decode


def _parse(payload: str) -> _Payload:
    """The payload's JSON object (its other members skipped), else ``MALFORMED_RESPONSE``."""
    try:
        return _decode_payload(payload)
    except msgspec.DecodeError:  # not JSON, or not an object
        raise LlmError(f"malformed SSE payload: {payload[:120]}", "MALFORMED_RESPONSE") from None


class StreamTranslator:
    """The translation state of one stream: payload strings in, stream chunks out.

    :meth:`feed` takes each payload in order and appends the chunks it yields to the
    caller's list; it returns True at ``[DONE]``, after appending the closing chunks
    (see the module docstring). It raises ``LlmError`` code ``MALFORMED_RESPONSE`` for a
    payload that is not a JSON object; chunks appended before the error stay in the
    list. Feeding after ``[DONE]`` is the caller's mistake. One translator per stream.
    """

    __slots__ = ("_blocks", "_finish", "_reasoning", "_text", "_tools", "_usage")

    def __init__(self) -> None:
        self._blocks: list[_Block] = []
        self._text: _Block | None = None
        self._reasoning: _Block | None = None
        self._tools: dict[int, _Block] = {}
        self._finish: FinishReason | None = None
        self._usage: TokenUsage | None = None

    def _open(self, kind: Literal["text", "reasoning", "tool-call"], out: list[StreamChunk]) -> _Block:
        block = _Block(len(self._blocks), kind)
        self._blocks.append(block)
        out.append(BlockStartChunk(index=block.index, block_type=kind))
        return block

    def feed(self, payload: str, out: list[StreamChunk]) -> bool:
        """Append the chunks of ``payload`` to ``out``; True when it was ``[DONE]``."""
        if payload == DONE:
            self._close(out)
            return True
        chunk = _parse(payload)
        choices = chunk.choices
        if isinstance(choices, list):
            for choice in choices:
                if isinstance(choice, dict):
                    self._choice(choice, out)
        usage = chunk.usage
        if isinstance(usage, dict):
            self._usage = map_usage(usage)
        return False

    def _choice(self, choice: dict[str, Any], out: list[StreamChunk]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            reasoning = delta.get("reasoning_content")
            if reasoning and isinstance(reasoning, str):
                block = self._reasoning
                if block is None:
                    block = self._reasoning = self._open("reasoning", out)
                block.parts.append(reasoning)
                out.append(ReasoningDeltaChunk(index=block.index, text=reasoning))
            content = delta.get("content")
            if content and isinstance(content, str):
                block = self._text
                if block is None:
                    block = self._text = self._open("text", out)
                block.parts.append(content)
                out.append(TextDeltaChunk(index=block.index, text=content))
            calls = delta.get("tool_calls")
            if isinstance(calls, list):
                for position, call in enumerate(calls):
                    self._tool_call(position, call if isinstance(call, dict) else _EMPTY, out)
        reason = choice.get("finish_reason")
        if isinstance(reason, str):
            self._finish = map_finish_reason(reason)

    def _tool_call(self, position: int, call: Mapping[str, Any], out: list[StreamChunk]) -> None:
        wire_index = call.get("index")
        key = wire_index if isinstance(wire_index, int) else position
        block = self._tools.get(key)
        if block is None:
            block = self._tools[key] = self._open("tool-call", out)
        call_id = call.get("id")
        if call_id and isinstance(call_id, str):
            block.call_id = call_id
        function = call.get("function")
        if not isinstance(function, dict):
            function = _EMPTY
        name = function.get("name")
        if name and isinstance(name, str):
            block.name = name
        fragment = function.get("arguments")
        fragment = fragment if isinstance(fragment, str) else ""
        block.parts.append(fragment)
        out.append(
            ToolCallDeltaChunk(index=block.index, id=block.call_id, name=block.name or UNSET, arguments_delta=fragment)
        )

    def _close(self, out: list[StreamChunk]) -> None:
        for block in self._blocks:
            out.append(BlockEndChunk(index=block.index, block=block.assembled()))
        if self._usage is not None:
            out.append(UsageChunk(usage=self._usage))
        out.append(FinishChunk(reason=self._finish if self._finish is not None else _STOP))


async def translate(payloads: AsyncIterable[str]) -> AsyncGenerator[StreamChunk, None]:
    """Turn SSE payload strings into stream chunks obeying the adapter contract (SPEC §2.2).

    On ``[DONE]``: a ``block-end`` per opened block (in open order), ``usage`` if any
    arrived (the last one wins), then ``finish`` (the last ``finish_reason`` seen, else
    ``stop``). Raises ``LlmError`` code ``MALFORMED_RESPONSE`` for a payload that is not
    a JSON object, and ``STREAM_CLOSED`` if ``payloads`` ends before ``[DONE]``. Closing
    this generator does not close ``payloads``: its owner does that.
    """
    translator = StreamTranslator()
    out: list[StreamChunk] = []
    async for payload in payloads:
        done = translator.feed(payload, out)
        for chunk in out:
            yield chunk
        out.clear()
        if done:
            return
    raise LlmError("SSE payload stream ended without [DONE]", "STREAM_CLOSED")
