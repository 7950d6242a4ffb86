"""DeepSeek stream payloads to dsh stream chunks (SPEC §10, translation).

One stream holds at most one reasoning block and one text block, plus one tool-call
block per wire ``tool_calls[].index``; block indices count up in the order blocks
open. Every ``block-end``, the ``usage`` and the ``finish`` wait for ``[DONE]``, so a
stream that breaks off never claims to have finished.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from dsh.adapters.deepseek.sse import DONE as DONE
from dsh.core.errors import LlmError
from dsh.core.llm import ContentBlock, FinishReason, StreamChunk, TokenUsage, ToolCallDeltaChunk


def map_finish_reason(reason: str) -> FinishReason:
    """``stop``, ``tool_calls`` and ``length`` map to their kinds; anything else is an in-band error.

    An unknown reason becomes ``{"kind": "error", "message": "model stopped: <reason>",
    "code": <REASON upper-cased>}`` (e.g. ``CONTENT_FILTER``).
    """
    if reason == "stop":
        return {"kind": "stop"}
    if reason == "tool_calls":
        return {"kind": "tool-calls"}
    if reason == "length":
        return {"kind": "max-tokens"}
    return {"kind": "error", "message": f"model stopped: {reason}", "code": reason.upper()}


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def map_usage(usage: Mapping[str, Any]) -> TokenUsage:
    """Wire usage to disjoint :class:`TokenUsage`.

    Cache hits come from ``prompt_tokens_details.cached_tokens``, else
    ``prompt_cache_hit_tokens``; they are subtracted from ``prompt_tokens`` and reported
    as ``cacheReadTokens`` (even when 0). ``reasoningTokens`` comes from
    ``completion_tokens_details.reasoning_tokens``. Absent wire fields stay absent.
    """
    cache_read = _mapping(usage.get("prompt_tokens_details")).get("cached_tokens")
    if cache_read is None:
        cache_read = usage.get("prompt_cache_hit_tokens")
    reasoning = _mapping(usage.get("completion_tokens_details")).get("reasoning_tokens")
    mapped: TokenUsage = {
        "inputTokens": (usage.get("prompt_tokens") or 0) - (cache_read or 0),
        "outputTokens": usage.get("completion_tokens") or 0,
    }
    if cache_read is not None:
        mapped["cacheReadTokens"] = cache_read
    if reasoning is not None:
        mapped["reasoningTokens"] = reasoning
    return mapped


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
            return {"type": "tool-call", "id": self.call_id, "name": self.name, "arguments": joined}
        if self.kind == "reasoning":
            return {"type": "reasoning", "text": joined}
        return {"type": "text", "text": joined}


class _Translation:
    """The state of one stream; see the module docstring."""

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

    def feed(self, chunk: Mapping[str, Any]) -> Iterator[StreamChunk]:
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            yield from self._choice(_mapping(choice))
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            self._usage = map_usage(usage)

    def _choice(self, choice: Mapping[str, Any]) -> Iterator[StreamChunk]:
        delta = _mapping(choice.get("delta"))
        reasoning = delta.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning:
            if self._reasoning is None:
                self._reasoning = self._open("reasoning")
                yield {"type": "block-start", "index": self._reasoning.index, "blockType": "reasoning"}
            self._reasoning.parts.append(reasoning)
            yield {"type": "reasoning-delta", "index": self._reasoning.index, "text": reasoning}
        content = delta.get("content")
        if isinstance(content, str) and content:
            if self._text is None:
                self._text = self._open("text")
                yield {"type": "block-start", "index": self._text.index, "blockType": "text"}
            self._text.parts.append(content)
            yield {"type": "text-delta", "index": self._text.index, "text": content}
        calls = delta.get("tool_calls")
        for position, call in enumerate(calls if isinstance(calls, list) else ()):
            yield from self._tool_call(position, _mapping(call))
        reason = choice.get("finish_reason")
        if isinstance(reason, str):
            self._finish = map_finish_reason(reason)

    def _tool_call(self, position: int, call: Mapping[str, Any]) -> Iterator[StreamChunk]:
        wire_index = call.get("index")
        key = wire_index if isinstance(wire_index, int) else position
        block = self._tools.get(key)
        if block is None:
            block = self._tools[key] = self._open("tool-call")
            yield {"type": "block-start", "index": block.index, "blockType": "tool-call"}
        call_id = call.get("id")
        if isinstance(call_id, str) and call_id:
            block.call_id = call_id
        function = _mapping(call.get("function"))
        name = function.get("name")
        if isinstance(name, str) and name:
            block.name = name
        fragment = function.get("arguments")
        fragment = fragment if isinstance(fragment, str) else ""
        block.parts.append(fragment)
        delta: ToolCallDeltaChunk
        if block.name:
            delta = {
                "type": "tool-call-delta",
                "index": block.index,
                "id": block.call_id,
                "name": block.name,
                "argumentsDelta": fragment,
            }
        else:
            delta = {
                "type": "tool-call-delta",
                "index": block.index,
                "id": block.call_id,
                "argumentsDelta": fragment,
            }
        yield delta

    def close(self) -> Iterator[StreamChunk]:
        for block in self._blocks:
            yield {"type": "block-end", "index": block.index, "block": block.assembled()}
        if self._usage is not None:
            yield {"type": "usage", "usage": self._usage}
        yield {"type": "finish", "reason": self._finish if self._finish is not None else {"kind": "stop"}}


def _parse(payload: str) -> Mapping[str, Any]:
    try:
        chunk = json.loads(payload)
    except ValueError:
        chunk = None
    if not isinstance(chunk, Mapping):
        raise LlmError(f"malformed SSE payload: {payload[:120]}", "MALFORMED_RESPONSE")
    return chunk


async def translate(payloads: AsyncIterable[str]) -> AsyncGenerator[StreamChunk, None]:
    """Turn SSE payload strings into stream chunks obeying the adapter contract (SPEC §2.2).

    On ``[DONE]``: a ``block-end`` per opened block (in open order), ``usage`` if any
    arrived (the last one wins), then ``finish`` (the last ``finish_reason`` seen, else
    ``stop``). Raises ``LlmError`` code ``MALFORMED_RESPONSE`` for a payload that is not
    a JSON object, and ``STREAM_CLOSED`` if ``payloads`` ends before ``[DONE]``. Closing
    this generator does not close ``payloads``: its owner does that.
    """
    state = _Translation()
    async for payload in payloads:
        if payload == DONE:
            for chunk in state.close():
                yield chunk
            return
        for chunk in state.feed(_parse(payload)):
            yield chunk
    raise LlmError("SSE payload stream ended without [DONE]", "STREAM_CLOSED")
