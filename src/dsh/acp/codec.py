"""Pure translations between dsh vocabulary and ACP wire values (SPEC §14.3, §14.5).

Nothing here touches a connection or a session: each function maps one value to
another, so live streaming and load replay share them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeAlias

StopReason: TypeAlias = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
"""The ACP ``session/prompt`` stop reasons (the bridge uses ``end_turn``, ``max_tokens``, ``cancelled``)."""

SUPPORTED_PROMPT_BLOCKS = frozenset({"text", "resource_link"})
"""Prompt block types the bridge accepts: the ACP baseline (no image/audio/embedded resource)."""

_STOP_REASONS: Mapping[str, StopReason] = {
    "completed": "end_turn",
    "max-tokens": "max_tokens",
    "aborted": "cancelled",
    "disposed": "cancelled",
    "error": "end_turn",
}


def turn_end_to_stop_reason(reason: Mapping[str, Any]) -> StopReason:
    """The stop reason reported for a turn that ended with ``reason`` (a ``TurnEndReason``).

    ``error`` maps to ``end_turn`` only defensively: the bridge rejects an errored
    prompt before it would ask. An unknown (future) kind maps to ``end_turn``.
    """
    return _STOP_REASONS.get(str(reason.get("kind")), "end_turn")


def harness_block_to_acp_content(block: Mapping[str, Any]) -> dict[str, Any] | None:
    """ACP text content for a dsh text block; None for every other block kind."""
    if block.get("type") == "text":
        return {"type": "text", "text": block.get("text", "")}
    return None


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def acp_prompt_to_text(prompt: Sequence[Mapping[str, Any]]) -> str:
    """The text the agent receives for an ACP prompt.

    Text blocks are concatenated verbatim; each ``resource_link`` contributes
    ``\\n[resource_link name=<JSON name> uri=<JSON uri>]\\n``; other kinds add nothing.
    """
    parts: list[str] = []
    for block in prompt:
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "resource_link":
            parts.append(f"\n[resource_link name={_json(block.get('name'))} uri={_json(block.get('uri'))}]\n")
    return "".join(parts)


def prompt_has_unsupported_content(prompt: Sequence[Mapping[str, Any]]) -> bool:
    """True when any block is neither ``text`` nor ``resource_link``."""
    return any(block.get("type") not in SUPPORTED_PROMPT_BLOCKS for block in prompt)
