"""Model scripts for the ui-stdio tests: streams with reasoning, text and tool calls."""

from __future__ import annotations

import json
from typing import Any, Literal

from dsh.core.llm import FinishReason, StreamChunk


def reasoning_block(index: int, *pieces: str) -> list[StreamChunk]:
    chunks: list[StreamChunk] = [{"type": "block-start", "index": index, "blockType": "reasoning"}]
    chunks.extend({"type": "reasoning-delta", "index": index, "text": piece} for piece in pieces)
    chunks.append({"type": "block-end", "index": index, "block": {"type": "reasoning", "text": "".join(pieces)}})
    return chunks


def text_block(index: int, *pieces: str) -> list[StreamChunk]:
    chunks: list[StreamChunk] = [{"type": "block-start", "index": index, "blockType": "text"}]
    chunks.extend({"type": "text-delta", "index": index, "text": piece} for piece in pieces)
    chunks.append({"type": "block-end", "index": index, "block": {"type": "text", "text": "".join(pieces)}})
    return chunks


def tool_call_block(index: int, call_id: str, name: str, arguments: dict[str, Any]) -> list[StreamChunk]:
    raw = json.dumps(arguments, separators=(",", ":"))
    return [
        {"type": "block-start", "index": index, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": index, "id": call_id, "name": name, "argumentsDelta": raw},
        {
            "type": "block-end",
            "index": index,
            "block": {"type": "tool-call", "id": call_id, "name": name, "arguments": raw},
        },
    ]


def finished(blocks: list[StreamChunk], kind: Literal["stop", "tool-calls"] = "stop") -> list[StreamChunk]:
    """``blocks`` then usage and a finish of ``kind``."""
    reason: FinishReason = {"kind": "stop"} if kind == "stop" else {"kind": "tool-calls"}
    return [
        *blocks,
        {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}},
        {"type": "finish", "reason": reason},
    ]
