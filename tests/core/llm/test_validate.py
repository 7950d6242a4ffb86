"""Validation of untrusted JSON into the llm vocabulary (dsh.core.llm.validate)."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from pydantic import ValidationError

from dsh.core.errors import HarnessError
from dsh.core.llm import (
    parse_content_block,
    parse_finish_reason,
    parse_message,
    parse_stream_chunk,
    parse_token_usage,
    validate,
)
from dsh.core.llm import types as vocabulary


def malformed(call: Any, value: object) -> str:
    with pytest.raises(HarnessError) as caught:
        call(value)
    assert caught.value.code == "MALFORMED"
    assert isinstance(caught.value.__cause__, ValidationError)
    return str(caught.value)


# ------------------------------------------------------------------------ content blocks

KNOWN_BLOCKS: list[dict[str, Any]] = [
    {"type": "text", "text": "hi"},
    {"type": "text", "text": "hi", "cache": "ephemeral"},
    {"type": "reasoning", "text": "hmm"},
    {"type": "tool-call", "id": "c1", "name": "read", "arguments": '{"path":"a"}'},
    {
        "type": "tool-result",
        "toolCallId": "c1",
        "content": [{"type": "text", "text": "ok"}],
        "isError": False,
    },
    {"type": "image", "url": "data:x", "mimeType": "image/png", "cache": "ephemeral"},
]


@pytest.mark.parametrize("block", KNOWN_BLOCKS)
def test_known_content_blocks_pass_unchanged(block: dict[str, Any]) -> None:
    """A valid block is returned as given: same object, keys and order untouched."""
    snapshot = list(block.items())
    assert parse_content_block(block) is block
    assert list(block.items()) == snapshot


def test_unknown_content_block_types_pass_as_is() -> None:
    """Content blocks are merge-extensible: any string type passes, other keys unchecked."""
    video = {"type": "video", "src": 3, "frames": [1, 2]}
    assert parse_content_block(video) is video
    nested = {"type": "tool-result", "toolCallId": "c", "content": [video]}
    assert parse_content_block(nested) is nested


def test_extra_keys_on_a_known_block_are_allowed() -> None:
    block = {"type": "text", "text": "x", "futureField": {"a": 1}}
    assert parse_content_block(block) is block


def test_a_block_that_is_not_an_object_is_malformed() -> None:
    message = malformed(parse_content_block, "just text")
    assert (
        message == 'malformed content block: a content block must be an object with a string "type" (got "just text")'
    )


def test_a_block_without_a_string_type_is_malformed() -> None:
    assert malformed(parse_content_block, {"type": 3}) == (
        "malformed content block: type: Input should be a valid string (got 3)"
    )
    assert malformed(parse_content_block, {"text": "x"}) == "malformed content block: type: Field required"


def test_known_block_fields_are_checked_strictly() -> None:
    assert malformed(parse_content_block, {"type": "text", "text": 1}) == (
        "malformed content block: text: Input should be a valid string (got 1)"
    )
    assert malformed(parse_content_block, {"type": "image"}) == "malformed content block: url: Field required"
    tool_call = {"type": "tool-call", "id": "c", "name": "n", "arguments": {"parsed": True}}
    assert "arguments: Input should be a valid string" in malformed(parse_content_block, tool_call)


def test_optional_keys_may_be_absent_but_never_null() -> None:
    message = malformed(parse_content_block, {"type": "text", "text": "x", "cache": None})
    assert message == "malformed content block: cache: Input should be 'ephemeral' (got null)"


def test_nested_tool_result_content_is_checked_and_every_problem_listed() -> None:
    block = {"type": "tool-result", "toolCallId": "c", "content": [{"type": "text", "text": 2}, 5]}
    message = malformed(parse_content_block, block)
    assert message == (
        "malformed content block: content[0].text: Input should be a valid string (got 2); "
        'content[1]: a content block must be an object with a string "type" (got 5)'
    )


def test_long_and_non_json_inputs_are_shown_shortened() -> None:
    long_text = "x" * 200
    message = malformed(parse_content_block, {"type": "text", "text": [long_text]})
    assert message == 'malformed content block: text: Input should be a valid string (got ["' + "x" * 55 + "...)"
    marker = object()
    assert repr(marker) in malformed(parse_content_block, marker)


# ------------------------------------------------------------------------------ messages


def test_messages_pass_unchanged() -> None:
    message = {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "custom"}]}
    assert parse_message(message) is message


def test_message_role_is_closed_and_content_must_be_a_list() -> None:
    assert malformed(parse_message, {"role": "tool", "content": []}) == (
        "malformed message: role: Input should be 'system', 'user' or 'assistant' (got \"tool\")"
    )
    assert "content: Input should be a valid list" in malformed(parse_message, {"role": "user", "content": "hi"})
    assert "content[0].text: Field required" in malformed(
        parse_message, {"role": "user", "content": [{"type": "text"}]}
    )


# ------------------------------------------------------------------------- stream chunks

VALID_CHUNKS: list[dict[str, Any]] = [
    {"type": "block-start", "index": 0, "blockType": "text"},
    {"type": "text-delta", "index": 0, "text": "a"},
    {"type": "reasoning-delta", "index": 1, "text": "b"},
    {"type": "tool-call-delta", "index": 2, "id": "c1", "argumentsDelta": "{"},
    {"type": "tool-call-delta", "index": 2, "id": "c1", "name": "read", "argumentsDelta": "}"},
    {"type": "block-end", "index": 0, "block": {"type": "text", "text": "a"}},
    {"type": "block-end", "index": 3, "block": {"type": "hologram", "depth": 3}},
    {"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 2, "cacheReadTokens": 0}},
    {"type": "finish", "reason": {"kind": "stop"}},
    {"type": "finish", "reason": {"kind": "error", "message": "boom", "code": "AUTH"}},
    {"type": "finish", "reason": {"kind": "paused-by-provider"}},
]


@pytest.mark.parametrize("chunk", VALID_CHUNKS)
def test_valid_stream_chunks_pass_unchanged(chunk: dict[str, Any]) -> None:
    assert parse_stream_chunk(chunk) is chunk


def test_stream_chunks_are_a_closed_union() -> None:
    expected = (
        'malformed stream chunk: a stream chunk must be an object whose "type" is one of: block-start, '
        'text-delta, reasoning-delta, tool-call-delta, block-end, usage, finish (got {"type":"rogue"})'
    )
    assert malformed(parse_stream_chunk, {"type": "rogue"}) == expected
    assert "a stream chunk must be an object" in malformed(parse_stream_chunk, [1, 2])


def test_stream_chunk_fields_are_checked_strictly() -> None:
    assert malformed(parse_stream_chunk, {"type": "text-delta", "index": True, "text": "a"}) == (
        "malformed stream chunk: index: Input should be a valid integer (got true)"
    )
    assert "index: Input should be a valid integer (got 1.0)" in malformed(
        parse_stream_chunk, {"type": "text-delta", "index": 1.0, "text": "a"}
    )
    bad_block = {"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": "c"}}
    message = malformed(parse_stream_chunk, bad_block)
    assert "block.name: Field required" in message
    assert "block.arguments: Field required" in message
    bad_finish = {"type": "finish", "reason": {"kind": "error"}}
    assert malformed(parse_stream_chunk, bad_finish) == "malformed stream chunk: reason.message: Field required"
    bad_usage = {"type": "usage", "usage": {"inputTokens": "1", "outputTokens": 2}}
    assert "usage.inputTokens: Input should be a valid integer" in malformed(parse_stream_chunk, bad_usage)


# --------------------------------------------------------------------- usage and finishes


def test_token_usage_takes_integers_only() -> None:
    usage = {"inputTokens": 1, "outputTokens": 2, "reasoningTokens": 3, "cacheWriteTokens": 4}
    assert parse_token_usage(usage) is usage
    assert "outputTokens: Field required" in malformed(parse_token_usage, {"inputTokens": 1})
    assert "inputTokens: Input should be a valid integer (got false)" in malformed(
        parse_token_usage, {"inputTokens": False, "outputTokens": 0}
    )


def test_finish_reasons_are_merge_extensible() -> None:
    for reason in (
        {"kind": "tool-calls"},
        {"kind": "max-tokens"},
        {"kind": "aborted"},
        {"kind": "later", "x": 1},
    ):
        assert parse_finish_reason(reason) is reason
    assert malformed(parse_finish_reason, {"kind": 1}) == (
        "malformed finish reason: kind: Input should be a valid string (got 1)"
    )
    assert malformed(parse_finish_reason, None) == (
        'malformed finish reason: a finish reason must be an object with a string "kind" (got null)'
    )


# -------------------------------------------------------------------------- drift guard


def _annotation(cls: Any, key: str) -> str:
    """The source text of a TypedDict key's annotation (a string, a ForwardRef or a real type)."""
    value = cls.__annotations__[key]
    return str(getattr(value, "__forward_arg__", value)).replace("typing.", "")


def _shape(cls: Any) -> dict[str, bool]:
    """Each key of a TypedDict and whether it is optional."""
    shape = {}
    for key, value in cls.__annotations__.items():
        text = value if isinstance(value, str) else getattr(value, "__forward_arg__", None)
        if isinstance(text, str):
            shape[key] = text.startswith("NotRequired[")
        else:
            shape[key] = key in cls.__optional_keys__
    return shape


def _tags(union: Any, key: str) -> tuple[str, ...]:
    return tuple(_annotation(member, key).split("'")[1] for member in typing.get_args(union))


MIRRORS = [
    (vocabulary.TextBlock, validate._TextBlock),
    (vocabulary.ReasoningBlock, validate._ReasoningBlock),
    (vocabulary.ToolCallBlock, validate._ToolCallBlock),
    (vocabulary.ToolResultBlock, validate._ToolResultBlock),
    (vocabulary.ImageBlock, validate._ImageBlock),
    (vocabulary.Message, validate._Message),
    (vocabulary.TokenUsage, validate._TokenUsage),
    (vocabulary.StopFinish, validate._StopFinish),
    (vocabulary.ToolCallsFinish, validate._ToolCallsFinish),
    (vocabulary.MaxTokensFinish, validate._MaxTokensFinish),
    (vocabulary.AbortedFinish, validate._AbortedFinish),
    (vocabulary.ErrorFinish, validate._ErrorFinish),
    (vocabulary.BlockStartChunk, validate._BlockStartChunk),
    (vocabulary.TextDeltaChunk, validate._TextDeltaChunk),
    (vocabulary.ReasoningDeltaChunk, validate._ReasoningDeltaChunk),
    (vocabulary.ToolCallDeltaChunk, validate._ToolCallDeltaChunk),
    (vocabulary.BlockEndChunk, validate._BlockEndChunk),
    (vocabulary.UsageChunk, validate._UsageChunk),
    (vocabulary.FinishChunk, validate._FinishChunk),
]


@pytest.mark.parametrize(("declared", "mirror"), MIRRORS, ids=[pair[0].__name__ for pair in MIRRORS])
def test_validation_shapes_mirror_the_vocabulary(declared: Any, mirror: Any) -> None:
    """The pydantic mirror of each TypedDict has the same keys, optionality and tag."""
    assert _shape(mirror) == _shape(declared)
    for tag in ("type", "kind"):
        if tag in declared.__annotations__:
            assert _annotation(mirror, tag) == _annotation(declared, tag)


def test_validation_tags_cover_every_union_member() -> None:
    assert _tags(vocabulary.ContentBlock, "type") == validate._BLOCK_TYPES
    assert _tags(vocabulary.FinishReason, "kind") == validate._FINISH_KINDS
    assert _tags(vocabulary.StreamChunk, "type") == validate._CHUNK_TYPES


def test_the_validators_are_imported_on_first_access() -> None:
    """Importing dsh.core.llm leaves .validate unloaded; a parse_* name loads it; other names still fail."""
    import subprocess
    import sys

    probe = (
        "import sys, dsh.core.llm as llm; before = 'dsh.core.llm.validate' in sys.modules; "
        "check = llm.parse_message; print(before, 'dsh.core.llm.validate' in sys.modules, "
        "check is llm.parse_message is llm.validate.parse_message)"
    )
    fresh = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert fresh.stdout.split() == ["False", "True", "True"]
    import dsh.core.llm as llm

    with pytest.raises(AttributeError, match=r"has no attribute 'parse_nothing'"):
        llm.parse_nothing  # noqa: B018
