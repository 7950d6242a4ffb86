"""SPEC §14.7 — ``packages/acp/tests/codec.spec.ts``: the pure codec."""

from __future__ import annotations

from typing import Any

import pytest
from acp.schema import PromptRequest
from msgspec import Raw

from dsh.acp import (
    acp_prompt_to_text,
    harness_block_to_acp_content,
    prompt_has_unsupported_content,
    turn_end_to_stop_reason,
)
from dsh.acp.codec import PromptBlock
from dsh.core.llm import ContentBlock, ImageBlock, ReasoningBlock, TextBlock, ToolCallBlock, ToolResultBlock
from dsh.core.session import (
    AbortedReason,
    CompletedReason,
    DisposedReason,
    ErrorReason,
    InterruptedReason,
    MaxStepsReason,
    MaxTokensReason,
    TurnEndReason,
)

LEGAL_STOP_REASONS = {"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"}


def prompt(*blocks: dict[str, Any]) -> list[PromptBlock]:
    """ACP prompt blocks as the bridge reads them: validated at the wire edge."""
    return PromptRequest.model_validate({"sessionId": "s", "prompt": list(blocks)}).prompt


# describe turnEndToStopReason
def test_maps_every_known_turn_end_reason_kind_to_a_legal_stop_reason() -> None:
    """maps every known TurnEndReason kind to a legal StopReason"""
    cases: list[tuple[TurnEndReason, str]] = [
        (CompletedReason(), "end_turn"),
        (MaxTokensReason(), "max_tokens"),
        (MaxStepsReason(), "max_turn_requests"),
        (AbortedReason(), "cancelled"),
        (AbortedReason(reason="session/cancel"), "cancelled"),
        (DisposedReason(), "cancelled"),
        (ErrorReason(message="boom"), "end_turn"),
    ]
    for reason, expected in cases:
        stop = turn_end_to_stop_reason(reason)
        assert stop == expected
        assert stop in LEGAL_STOP_REASONS


def test_falls_back_to_end_turn_for_an_unknown_merge_extensible_future_kind() -> None:
    """falls back to end_turn for an unknown (merge-extensible) future kind"""
    assert turn_end_to_stop_reason(Raw(b'{"kind":"teleported"}')) == "end_turn"
    assert turn_end_to_stop_reason(InterruptedReason()) == "end_turn"


# describe harnessBlockToAcpContent
def test_maps_a_text_block_to_acp_text_content() -> None:
    """maps a text block to ACP text content"""
    assert harness_block_to_acp_content(TextBlock(text="hi")) == {"type": "text", "text": "hi"}
    assert list(harness_block_to_acp_content(TextBlock(text="x", cache="ephemeral")) or {}) == ["type", "text"]


@pytest.mark.parametrize(
    "block",
    [
        ReasoningBlock(text="thinking"),
        ToolCallBlock(id="c1", name="bash", arguments="{}"),
        ToolResultBlock(tool_call_id="c1", content=()),
        ImageBlock(url="data:image/png;base64,AA=="),
        Raw(b'{"type":"text-v2","text":"from a newer writer"}'),
    ],
)
def test_returns_undefined_for_non_text_blocks_reasoning_tool_image(block: ContentBlock) -> None:
    """returns undefined for non-text blocks (reasoning/tool/image, and an unknown block)"""
    assert harness_block_to_acp_content(block) is None


# describe acpPromptToText
def test_concatenates_text_blocks_and_renders_resource_links_explicitly() -> None:
    """concatenates text blocks and renders resource links explicitly"""
    blocks = prompt(
        {"type": "text", "text": "hello "},
        {"type": "resource_link", "name": "x", "uri": "file:///x"},
        {"type": "text", "text": "world"},
    )
    assert acp_prompt_to_text(blocks) == 'hello \n[resource_link name="x" uri="file:///x"]\nworld'


def test_resource_link_names_are_json_encoded() -> None:
    """(extra) names and uris are JSON strings: quotes escaped, non-ASCII kept"""
    text = acp_prompt_to_text(prompt({"type": "resource_link", "name": 'a"b', "uri": "file:///ü"}))
    assert text == '\n[resource_link name="a\\"b" uri="file:///ü"]\n'


def test_returns_empty_string_for_a_prompt_with_no_text_blocks() -> None:
    """returns empty string for a prompt with no text blocks"""
    assert acp_prompt_to_text([]) == ""
    assert acp_prompt_to_text(prompt({"type": "image", "data": "AA==", "mimeType": "image/png"})) == ""


# describe promptHasUnsupportedContent
def test_detects_image_audio_and_embedded_resource_blocks() -> None:
    """detects image, audio, and embedded resource blocks"""
    text = {"type": "text", "text": "hi"}
    assert prompt_has_unsupported_content(prompt(text, {"type": "image", "data": "AA==", "mimeType": "image/png"}))
    assert prompt_has_unsupported_content(prompt({"type": "audio", "data": "AA==", "mimeType": "audio/wav"}, text))
    assert prompt_has_unsupported_content(prompt({"type": "resource", "resource": {"uri": "file:///x", "text": "x"}}))


def test_passes_baseline_text_and_resource_link_prompt_blocks() -> None:
    """passes baseline text and resource_link prompt blocks"""
    assert not prompt_has_unsupported_content(
        prompt({"type": "text", "text": "hi"}, {"type": "resource_link", "name": "x", "uri": "file:///x"})
    )
    assert not prompt_has_unsupported_content([])
