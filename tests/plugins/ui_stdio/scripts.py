"""Model scripts for the ui-stdio tests: streams with reasoning, text and tool calls."""

from __future__ import annotations

import json
from typing import Any, Literal

from dsh.core.llm import (
    BlockEndChunk,
    BlockStartChunk,
    FinishChunk,
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


def reasoning_block(index: int, *pieces: str) -> list[StreamChunk]:
    chunks: list[StreamChunk] = [BlockStartChunk(index=index, block_type="reasoning")]
    chunks.extend(ReasoningDeltaChunk(index=index, text=piece) for piece in pieces)
    chunks.append(BlockEndChunk(index=index, block=ReasoningBlock(text="".join(pieces))))
    return chunks


def text_block(index: int, *pieces: str) -> list[StreamChunk]:
    chunks: list[StreamChunk] = [BlockStartChunk(index=index, block_type="text")]
    chunks.extend(TextDeltaChunk(index=index, text=piece) for piece in pieces)
    chunks.append(BlockEndChunk(index=index, block=TextBlock(text="".join(pieces))))
    return chunks


def tool_call_block(index: int, call_id: str, name: str, arguments: dict[str, Any]) -> list[StreamChunk]:
    raw = json.dumps(arguments, separators=(",", ":"))
    return [
        BlockStartChunk(index=index, block_type="tool-call"),
        ToolCallDeltaChunk(index=index, id=call_id, name=name, arguments_delta=raw),
        BlockEndChunk(index=index, block=ToolCallBlock(id=call_id, name=name, arguments=raw)),
    ]


def finished(blocks: list[StreamChunk], kind: Literal["stop", "tool-calls"] = "stop") -> list[StreamChunk]:
    """``blocks`` then usage and a finish of ``kind``."""
    return [
        *blocks,
        UsageChunk(usage=TokenUsage(input_tokens=1, output_tokens=1)),
        FinishChunk(reason=StopFinish() if kind == "stop" else ToolCallsFinish()),
    ]
