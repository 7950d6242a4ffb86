"""The demo model: an :class:`~dsh.core.llm.LlmAdapter` that plays :mod:`.script` as a stream."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Sequence

from dsh.core.llm import (
    BlockEndChunk,
    BlockStartChunk,
    FinishChunk,
    GenerateOptions,
    LlmAdapter,
    Message,
    StopFinish,
    StreamChunk,
    TextBlock,
    TextDeltaChunk,
    TokenUsage,
    ToolCallBlock,
    ToolCallDeltaChunk,
    ToolCallsFinish,
    UsageChunk,
    to_json,
)
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
    """A deterministic estimate: about four characters of JSON content a token (nothing is billed).

    The JSON is spelled as ``json.dumps`` does by default (``", "`` and ``": "``), so the
    figures stay those of earlier versions.
    """
    read = sum(len(json.dumps(to_json(message.content), ensure_ascii=False)) for message in messages)
    return TokenUsage(input_tokens=-(-read // 4), output_tokens=-(-len(answer) // 4))


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
            summary = summarize_result(result, command_of(messages, result.tool_call_id))
            return [*_text_chunks(summary), UsageChunk(usage=_usage(messages, summary)), FinishChunk(reason=_STOP)]
        call = plan_command(latest_prompt(messages))
        intro = announce(call)
        call_id = f"demo-call-{count_tool_calls(messages) + 1}"
        arguments = call.arguments()
        return [
            *_text_chunks(intro),
            BlockStartChunk(index=1, block_type="tool-call"),
            ToolCallDeltaChunk(index=1, id=call_id, name="bash", arguments_delta=arguments),
            BlockEndChunk(index=1, block=ToolCallBlock(id=call_id, name="bash", arguments=arguments)),
            UsageChunk(usage=_usage(messages, intro + arguments)),
            FinishChunk(reason=_TOOL_CALLS),
        ]

    @staticmethod
    async def _play(options: GenerateOptions, chunks: list[StreamChunk]) -> AsyncIterator[StreamChunk]:
        signal = options.signal
        for chunk in chunks:
            await asyncio.sleep(0)
            if signal is not None:
                signal.throw_if_aborted()
            yield chunk


_STOP = StopFinish()
_TOOL_CALLS = ToolCallsFinish()


def _text_chunks(value: str) -> list[StreamChunk]:
    chunks: list[StreamChunk] = [BlockStartChunk(index=0, block_type="text")]
    chunks.extend(TextDeltaChunk(index=0, text=piece) for piece in _pieces(value))
    chunks.append(BlockEndChunk(index=0, block=TextBlock(text=value)))
    return chunks
