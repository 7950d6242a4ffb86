"""Message content as the GenAI conventions' JSON attributes (only when capture is on).

``gen_ai.input.messages`` / ``gen_ai.output.messages`` hold a JSON array of
``{"role", "parts"}`` objects; each part is ``{"type": "text", "content"}``,
``{"type": "reasoning", "content"}``, ``{"type": "tool_call", "id", "name",
"arguments"}``, ``{"type": "tool_call_response", "id", "response"}`` or
``{"type": "uri", "modality": "image", "uri"}``. Text is kept as it is (compact JSON,
UTF-8 unescaped). Pure functions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from dsh.core.llm import (
    ContentBlock,
    FinishReason,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    variant_tag,
)

_FINISH_NAMES = {"stop": "stop", "tool-calls": "tool_calls", "max-tokens": "length"}


def finish_name(finish: FinishReason) -> str:
    """The ``gen_ai.response.finish_reasons`` entry of ``finish`` (``stop``, ``tool_calls``, ``length``, ...)."""
    tag = variant_tag(finish) or "unknown"
    return _FINISH_NAMES.get(tag, tag)


def to_json(value: object) -> str:
    """Compact JSON with non-ASCII text as is."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _arguments(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def text_of(content: Iterable[ContentBlock]) -> str:
    """The text blocks of ``content`` joined (what a tool result says)."""
    return "".join(block.text for block in content if type(block) is TextBlock)


def _part(block: ContentBlock) -> dict[str, Any] | None:
    if type(block) is TextBlock:
        return {"type": "text", "content": block.text}
    if type(block) is ReasoningBlock:
        return {"type": "reasoning", "content": block.text}
    if type(block) is ToolCallBlock:
        return {"type": "tool_call", "id": block.id, "name": block.name, "arguments": _arguments(block.arguments)}
    if type(block) is ToolResultBlock:
        return {"type": "tool_call_response", "id": block.tool_call_id, "response": text_of(block.content)}
    if type(block) is ImageBlock:
        return {"type": "uri", "modality": "image", "uri": block.url}
    return None


def _parts(content: Iterable[ContentBlock]) -> list[dict[str, Any]]:
    return [part for part in map(_part, content) if part is not None]


def input_messages(messages: Sequence[Message]) -> str:
    """``gen_ai.input.messages`` of a request's ``messages``."""
    return to_json([{"role": message.role, "parts": _parts(message.content)} for message in messages])


def output_messages(message: Message, finish: str | None) -> str:
    """``gen_ai.output.messages`` of the answer ``message`` (with its finish reason when known)."""
    entry: dict[str, Any] = {"role": message.role, "parts": _parts(message.content)}
    if finish is not None:
        entry["finish_reason"] = finish
    return to_json([entry])


def system_instructions(system: str) -> str:
    """``gen_ai.system_instructions`` of a request's system prompt."""
    return to_json([{"type": "text", "content": system}])
