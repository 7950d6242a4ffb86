"""Pure translations between dsh vocabulary and ACP wire values (SPEC §14.3, §14.5).

Nothing here touches a connection or a session: each function maps one value to
another, so live streaming and load replay share them. ACP prompt blocks arrive as
the validated ``acp.schema`` content blocks; dsh values are the typed vocabulary.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypeAlias

from acp.schema import (
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    StopReason,
    TextContentBlock,
)

from dsh.core.llm import ContentBlock, TextBlock
from dsh.core.session import AbortedReason, DisposedReason, MaxStepsReason, MaxTokensReason, TurnEndReason

PromptBlock: TypeAlias = (
    TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock | EmbeddedResourceContentBlock
)
"""One block of an ACP prompt, as ``acp.schema.PromptRequest`` validates it."""


__all__ = [
    "PromptBlock",
    "StopReason",
    "acp_prompt_to_text",
    "harness_block_to_acp_content",
    "prompt_has_unsupported_content",
    "turn_end_to_stop_reason",
]


def turn_end_to_stop_reason(reason: TurnEndReason) -> StopReason:
    """The stop reason reported for a turn that ended with ``reason``.

    ``max-tokens`` → ``max_tokens``; ``max-steps`` (the turn's step limit) →
    ``max_turn_requests``; ``aborted`` and ``disposed`` → ``cancelled``;
    everything else → ``end_turn``: ``completed``, ``interrupted``, an unknown (future)
    kind, and ``error`` (only defensively: the bridge rejects an errored prompt
    before it would ask).
    """
    kind = type(reason)
    if kind is MaxTokensReason:
        return "max_tokens"
    if kind is MaxStepsReason:
        return "max_turn_requests"
    if kind is AbortedReason or kind is DisposedReason:
        return "cancelled"
    return "end_turn"


def harness_block_to_acp_content(block: ContentBlock) -> dict[str, Any] | None:
    """ACP text content for a dsh text block; None for every other block (an unknown one too)."""
    if type(block) is TextBlock:
        return {"type": "text", "text": block.text}
    return None


def _json(value: str) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def acp_prompt_to_text(prompt: Sequence[PromptBlock]) -> str:
    """The text the agent receives for an ACP prompt.

    Text blocks are concatenated verbatim; each ``resource_link`` contributes
    ``\\n[resource_link name=<JSON name> uri=<JSON uri>]\\n``; other kinds add nothing.
    """
    parts: list[str] = []
    for block in prompt:
        if type(block) is TextContentBlock:
            parts.append(block.text)
        elif type(block) is ResourceContentBlock:
            parts.append(f"\n[resource_link name={_json(block.name)} uri={_json(block.uri)}]\n")
    return "".join(parts)


def prompt_has_unsupported_content(prompt: Sequence[PromptBlock]) -> bool:
    """True when any block is neither ``text`` nor ``resource_link``."""
    return any(type(block) is not TextContentBlock and type(block) is not ResourceContentBlock for block in prompt)
