"""DeepSeek stream payloads to dsh stream chunks (SPEC §10, translation).

One stream holds at most one reasoning block and one text block, plus one tool-call
block per wire ``tool_calls[].index``; block indices count up in the order blocks
open. Every ``block-end``, the ``usage`` and the ``finish`` wait for ``[DONE]``, so a
stream that breaks off never claims to have finished.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterable, Mapping
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


_EMPTY: Mapping[str, Any] = {}


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else _EMPTY


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
            return {"type": "tool-call", "id": self.call_id, "name": self.name, "arguments": joined}
        if self.kind == "reasoning":
            return {"type": "reasoning", "text": joined}
        return {"type": "text", "text": joined}


def _parse(payload: str) -> dict[str, Any]:
    try:
        chunk = json.loads(payload)
    except ValueError:
        chunk = None
    if not isinstance(chunk, dict):
        raise LlmError(f"malformed SSE payload: {payload[:120]}", "MALFORMED_RESPONSE")
    return chunk


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
        out.append({"type": "block-start", "index": block.index, "blockType": kind})
        return block

    def feed(self, payload: str, out: list[StreamChunk]) -> bool:
        """Append the chunks of ``payload`` to ``out``; True when it was ``[DONE]``."""
        if payload == DONE:
            self._close(out)
            return True
        chunk = _parse(payload)
        choices = chunk.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                if isinstance(choice, dict):
                    self._choice(choice, out)
        usage = chunk.get("usage")
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
                out.append({"type": "reasoning-delta", "index": block.index, "text": reasoning})
            content = delta.get("content")
            if content and isinstance(content, str):
                block = self._text
                if block is None:
                    block = self._text = self._open("text", out)
                block.parts.append(content)
                out.append({"type": "text-delta", "index": block.index, "text": content})
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
            delta = {"type": "tool-call-delta", "index": block.index, "id": block.call_id, "argumentsDelta": fragment}
        out.append(delta)

    def _close(self, out: list[StreamChunk]) -> None:
        for block in self._blocks:
            out.append({"type": "block-end", "index": block.index, "block": block.assembled()})
        if self._usage is not None:
            out.append({"type": "usage", "usage": self._usage})
        out.append({"type": "finish", "reason": self._finish if self._finish is not None else {"kind": "stop"}})


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
