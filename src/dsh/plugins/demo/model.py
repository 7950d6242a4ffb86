"""The demo model: an :class:`~dsh.core.llm.LlmAdapter` that plays :mod:`.script` as a stream."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Sequence

from dsh.core.llm import GenerateOptions, LlmAdapter, Message, StreamChunk, TokenUsage
from dsh.plugins.demo.script import (
    announce,
    command_of,
    count_tool_calls,
    last_tool_result,
    latest_prompt,
    plan_command,
    summarize_result,
)

_PIECES = re.compile(r"\S+\s*|\s+")


def _pieces(value: str) -> list[str]:
    """``value`` cut into word-sized deltas that join back to it exactly."""
    return _PIECES.findall(value)


def _usage(messages: Sequence[Message], answer: str) -> TokenUsage:
    """A deterministic estimate: about four characters of JSON content a token (nothing is billed)."""
    read = sum(len(json.dumps(message["content"], ensure_ascii=False)) for message in messages)
    return {"inputTokens": -(-read // 4), "outputTokens": -(-len(answer) // 4)}


class DemoModel(LlmAdapter):
    """Answers a prompt with one ``bash`` call, then summarizes the call's result.

    Deterministic and offline. The stream yields to the event loop between chunks
    and stops with the signal's ``AbortError`` once the step's signal fires.
    ``calls`` counts the streams started.
    """

    def __init__(self) -> None:
        self.calls = 0

    def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        self.calls += 1
        return self._play(options, self.respond(options.messages))

    @staticmethod
    def respond(messages: Sequence[Message]) -> list[StreamChunk]:
        """The whole answer to ``messages`` as chunks (see :mod:`dsh.plugins.demo.script`)."""
        result = last_tool_result(messages)
        if result is not None:
            summary = summarize_result(result, command_of(messages, result["toolCallId"]))
            return [*_text_chunks(summary), {"type": "usage", "usage": _usage(messages, summary)}, _finish("stop")]
        call = plan_command(latest_prompt(messages))
        intro = announce(call)
        call_id = f"demo-call-{count_tool_calls(messages) + 1}"
        arguments = call.arguments()
        return [
            *_text_chunks(intro),
            {"type": "block-start", "index": 1, "blockType": "tool-call"},
            {"type": "tool-call-delta", "index": 1, "id": call_id, "name": "bash", "argumentsDelta": arguments},
            {
                "type": "block-end",
                "index": 1,
                "block": {"type": "tool-call", "id": call_id, "name": "bash", "arguments": arguments},
            },
            {"type": "usage", "usage": _usage(messages, intro + arguments)},
            _finish("tool-calls"),
        ]

    @staticmethod
    async def _play(options: GenerateOptions, chunks: list[StreamChunk]) -> AsyncIterator[StreamChunk]:
        signal = options.signal
        for chunk in chunks:
            await asyncio.sleep(0)
            if signal is not None:
                signal.throw_if_aborted()
            yield chunk


def _text_chunks(value: str) -> list[StreamChunk]:
    chunks: list[StreamChunk] = [{"type": "block-start", "index": 0, "blockType": "text"}]
    chunks.extend({"type": "text-delta", "index": 0, "text": piece} for piece in _pieces(value))
    chunks.append({"type": "block-end", "index": 0, "block": {"type": "text", "text": value}})
    return chunks


def _finish(kind: str) -> StreamChunk:
    if kind == "stop":
        return {"type": "finish", "reason": {"kind": "stop"}}
    return {"type": "finish", "reason": {"kind": "tool-calls"}}
