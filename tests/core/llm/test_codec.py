"""The llm codec (dsh.core.llm.codec): one checked pass at the edge, unknown variants kept."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from dsh.core.errors import HarnessError
from dsh.core.llm import (
    UNSET,
    BlockEndChunk,
    ContentBlock,
    ErrorFinish,
    FinishChunk,
    FinishReason,
    ImageBlock,
    Message,
    StopFinish,
    StreamChunk,
    TextBlock,
    TextDeltaChunk,
    TokenUsage,
    ToolCallBlock,
    ToolCallDeltaChunk,
    ToolResultBlock,
    Unknown,
    convert,
    decode,
    encode,
    parse_content_block,
    parse_finish_reason,
    parse_message,
    parse_stream_chunk,
    parse_token_usage,
    text,
    to_json,
    variant_tag,
)


def malformed(call: Any, *args: object) -> str:
    with pytest.raises(HarnessError) as caught:
        call(*args)
    assert caught.value.code == "MALFORMED"
    assert caught.value.__cause__ is not None
    return str(caught.value)


# ------------------------------------------------------------------------ content blocks

KNOWN_BLOCKS: list[dict[str, Any]] = [
    {"type": "text", "text": "hi"},
    {"type": "text", "text": "hi", "cache": "ephemeral"},
    {"type": "reasoning", "text": "hmm"},
    {"type": "tool-call", "id": "c1", "name": "read", "arguments": '{"path":"a"}'},
    {"type": "tool-result", "toolCallId": "c1", "content": [{"type": "text", "text": "ok"}], "isError": False},
    {"type": "image", "url": "data:x", "mimeType": "image/png", "cache": "ephemeral"},
]


@pytest.mark.parametrize("block", KNOWN_BLOCKS)
def test_known_content_blocks_round_trip_exactly(block: dict[str, Any]) -> None:
    """A valid block becomes its typed value; written back it is the same JSON, keys in order."""
    value = parse_content_block(block)
    assert not isinstance(value, msgspec.Raw)
    assert list(to_json(value).items()) == list(block.items())
    assert decode(encode(value), ContentBlock) == value


def test_typed_fields_are_snake_case_and_the_wire_is_camel_case() -> None:
    block = parse_content_block(KNOWN_BLOCKS[4])
    assert block == ToolResultBlock(tool_call_id="c1", content=(text("ok"),), is_error=False)
    image = parse_content_block(KNOWN_BLOCKS[5])
    assert image == ImageBlock(url="data:x", mime_type="image/png", cache="ephemeral")
    assert encode(ToolCallDeltaChunk(index=0, id="c", arguments_delta="{")) == (
        b'{"type":"tool-call-delta","index":0,"id":"c","argumentsDelta":"{"}'
    )


def test_absent_optional_fields_are_unset_and_not_written() -> None:
    block = parse_content_block({"type": "text", "text": "x"})
    assert type(block) is TextBlock
    assert block.cache is UNSET
    assert not block.cache
    assert encode(block) == b'{"type":"text","text":"x"}'


def test_values_are_immutable() -> None:
    block = text("x")
    with pytest.raises(AttributeError):
        block.text = "y"  # type: ignore[misc]
    message = Message(role="user", content=(block,))
    with pytest.raises(AttributeError):
        message.role = "assistant"  # type: ignore[misc]
    assert hash(block) == hash(text("x"))


def test_unknown_content_block_types_are_kept_and_written_back_byte_identical() -> None:
    """Content blocks are merge-extensible: an unknown type becomes Unknown, its other keys unchecked."""
    line = b'{"type":"video","src":3,"frames":[1,2],"note":"caf\xc3\xa9"}'
    video = decode(line, ContentBlock)
    assert type(video) is Unknown
    assert encode(video) == line
    assert variant_tag(video) == "video"
    nested = parse_content_block({"type": "tool-result", "toolCallId": "c", "content": [{"type": "video", "src": 3}]})
    assert type(nested) is ToolResultBlock
    assert type(nested.content[0]) is Unknown
    assert encode(nested) == b'{"type":"tool-result","toolCallId":"c","content":[{"type":"video","src":3}]}'


def test_a_stream_with_an_unknown_block_decodes_through_the_fallback_byte_identical() -> None:
    line = b'{"type":"block-end","index":3,"block":{"type":"hologram","depth":3}}'
    chunk = decode(line, StreamChunk, "stream chunk")
    assert type(chunk) is BlockEndChunk
    assert type(chunk.block) is Unknown
    assert encode(chunk) == line


def test_extra_keys_on_a_known_block_are_ignored() -> None:
    assert parse_content_block({"type": "text", "text": "x", "futureField": {"a": 1}}) == text("x")


def test_a_block_that_is_not_an_object_is_malformed() -> None:
    assert malformed(parse_content_block, "just text") == (
        "malformed content block: Expected `object`, got `str` - at `$`"
    )


def test_a_block_without_a_string_type_is_malformed() -> None:
    assert malformed(parse_content_block, {"type": 3}) == (
        "malformed content block: Expected `str`, got `int` - at `$.type`"
    )
    assert malformed(parse_content_block, {"text": "x"}) == (
        "malformed content block: Object missing required field `type` - at `$`"
    )


def test_known_block_fields_are_checked_strictly() -> None:
    assert malformed(parse_content_block, {"type": "text", "text": 1}) == (
        "malformed content block: Expected `str`, got `int` - at `$.text`"
    )
    assert malformed(parse_content_block, {"type": "image"}) == (
        "malformed content block: Object missing required field `url` - at `$`"
    )
    tool_call = {"type": "tool-call", "id": "c", "name": "n", "arguments": {"parsed": True}}
    assert "Expected `str`, got `object` - at `$.arguments`" in malformed(parse_content_block, tool_call)


def test_optional_keys_may_be_absent_but_never_null() -> None:
    assert malformed(parse_content_block, {"type": "text", "text": "x", "cache": None}) == (
        "malformed content block: Expected `str`, got `null` - at `$.cache`"
    )
    # the same verdict when an unknown sibling sends the value through the fallback
    mixed = {"type": "tool-result", "toolCallId": "c", "content": [{"type": "new"}], "isError": None}
    assert (
        malformed(parse_content_block, mixed) == "malformed content block: Expected `bool`, got `null` - at `$.isError`"
    )


def test_nested_content_is_checked_with_its_path() -> None:
    block = {"type": "tool-result", "toolCallId": "c", "content": [{"type": "text", "text": 2}, 5]}
    assert malformed(parse_content_block, block) == (
        "malformed content block: Expected `str`, got `int` - at `$.content[0].text`"
    )
    after_unknown = {"type": "tool-result", "toolCallId": "c", "content": [{"type": "new"}, 5]}
    assert malformed(parse_content_block, after_unknown) == (
        "malformed content block: Expected `object`, got `int` - at `$.content[1]`"
    )


def test_a_missing_field_is_named_by_its_wire_name_and_path() -> None:
    """The fast path and the fallback both name the camelCase key and where it is missing."""
    assert malformed(parse_content_block, {"type": "tool-result", "content": []}) == (
        "malformed content block: Object missing required field `toolCallId` - at `$`"
    )
    nested = {
        "role": "user",
        "content": [{"type": "new"}, {"type": "tool-result", "toolCallId": "c", "content": [{"type": "image"}]}],
    }
    assert malformed(parse_message, nested) == (
        "malformed message: Object missing required field `url` - at `$.content[1].content[0]`"
    )


def test_the_fallback_checks_the_tag_of_a_struct_decoded_directly() -> None:
    """A tagged struct read directly still refuses another variant's tag (fast path and fallback)."""
    assert malformed(convert, {"type": "image", "text": "x"}, TextBlock, "block") == (
        "malformed block: Invalid value 'image' - at `$.type`"
    )
    assert convert({"text": "x"}, TextBlock) == text("x")  # the tag may be left out


# ------------------------------------------------------------------------------ messages


def test_messages_keep_known_and_unknown_blocks_in_order() -> None:
    message = parse_message({"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "custom"}]})
    assert message.role == "user"
    assert message.content[0] == text("hi")
    assert type(message.content[1]) is Unknown
    assert to_json(message) == {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "custom"}]}


def test_message_role_is_closed_and_content_must_be_a_list() -> None:
    assert malformed(parse_message, {"role": "tool", "content": []}) == (
        "malformed message: Invalid enum value 'tool' - at `$.role`"
    )
    assert "Expected `array`, got `str` - at `$.content`" in malformed(parse_message, {"role": "user", "content": "hi"})
    assert "missing required field `text` - at `$.content[0]`" in malformed(
        parse_message, {"role": "user", "content": [{"type": "text"}]}
    )


def test_convert_takes_typed_values_and_unknown_values_inside_json() -> None:
    """Already-typed values (known or Unknown, in lists or tuples) pass through convert as they are."""
    unknown = decode(b'{"type":"x"}', ContentBlock)
    message = convert({"role": "assistant", "content": [text("a"), unknown]}, Message)
    assert message.content == (text("a"), unknown)
    assert message.content[1] is unknown
    assert convert({"role": "assistant", "content": (unknown,)}, Message).content == (unknown,)
    assert convert(unknown, ContentBlock) is unknown


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
def test_valid_stream_chunks_round_trip(chunk: dict[str, Any]) -> None:
    value = parse_stream_chunk(chunk)
    assert to_json(value) == chunk
    assert decode(encode(value), StreamChunk) == value


def test_stream_chunks_are_a_closed_union() -> None:
    assert (
        malformed(parse_stream_chunk, {"type": "rogue"})
        == "malformed stream chunk: Invalid value 'rogue' - at `$.type`"
    )
    assert malformed(decode, b'{"type":"rogue"}', StreamChunk, "stream chunk") == (
        "malformed stream chunk: Invalid value 'rogue' - at `$.type`"
    )
    assert "Expected `object`, got `array`" in malformed(parse_stream_chunk, [1, 2])


def test_stream_chunk_fields_are_checked_strictly() -> None:
    assert malformed(parse_stream_chunk, {"type": "text-delta", "index": True, "text": "a"}) == (
        "malformed stream chunk: Expected `int`, got `bool` - at `$.index`"
    )
    assert "Expected `int`, got `float` - at `$.index`" in malformed(
        parse_stream_chunk, {"type": "text-delta", "index": 1.0, "text": "a"}
    )
    bad_block = {"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": "c"}}
    assert "missing required field `name` - at `$.block`" in malformed(parse_stream_chunk, bad_block)
    bad_finish = {"type": "finish", "reason": {"kind": "error"}}
    assert malformed(parse_stream_chunk, bad_finish) == (
        "malformed stream chunk: Object missing required field `message` - at `$.reason`"
    )
    bad_usage = {"type": "usage", "usage": {"inputTokens": "1", "outputTokens": 2}}
    assert "Expected `int`, got `str` - at `$.usage.inputTokens`" in malformed(parse_stream_chunk, bad_usage)


# --------------------------------------------------------------------- usage and finishes


def test_token_usage_takes_integers_only() -> None:
    usage = parse_token_usage({"inputTokens": 1, "outputTokens": 2, "reasoningTokens": 3, "cacheWriteTokens": 4})
    assert usage == TokenUsage(input_tokens=1, output_tokens=2, reasoning_tokens=3, cache_write_tokens=4)
    assert (usage.cache_read_tokens or 0) == 0
    assert "missing required field `outputTokens`" in malformed(parse_token_usage, {"inputTokens": 1})
    assert "Expected `int`, got `bool` - at `$.inputTokens`" in malformed(
        parse_token_usage, {"inputTokens": False, "outputTokens": 0}
    )
    assert "Expected `int`, got `str` - at `$.inputTokens`" in malformed(
        parse_token_usage, {"inputTokens": "1", "outputTokens": 0}
    )


def test_finish_reasons_are_merge_extensible() -> None:
    for reason in ({"kind": "tool-calls"}, {"kind": "max-tokens"}, {"kind": "aborted"}):
        assert to_json(parse_finish_reason(reason)) == reason
    later = parse_finish_reason({"kind": "later", "x": 1})
    assert type(later) is Unknown
    assert encode(later) == b'{"kind":"later","x":1}'
    assert variant_tag(later) == "later"
    assert (
        malformed(parse_finish_reason, {"kind": 1})
        == "malformed finish reason: Expected `str`, got `int` - at `$.kind`"
    )
    assert malformed(parse_finish_reason, None) == "malformed finish reason: Expected `object`, got `null` - at `$`"
    assert parse_finish_reason({"kind": "error", "message": "m"}) == ErrorFinish(message="m")


def test_unknown_finish_in_a_chunk_line_is_kept() -> None:
    line = b'{"type":"finish","reason":{"kind":"paused","for":12}}'
    chunk = decode(line, StreamChunk)
    assert type(chunk) is FinishChunk
    assert type(chunk.reason) is Unknown
    assert encode(chunk) == line


# ------------------------------------------------------------------- decode and helpers


def test_decode_reports_text_that_is_not_json() -> None:
    assert malformed(decode, b"{nope", Message, "message").startswith("malformed message: not JSON: ")
    # the typed pass stops at the wrong role before it reaches the torn end: still reported as not JSON
    assert malformed(decode, b'{"role":5,', Message, "message").startswith("malformed message: not JSON: ")
    assert malformed(decode, "[1]", Message) == "malformed JSON value: Expected `object`, got `array` - at `$`"


def test_decode_takes_str_and_bytes_and_reuses_its_decoder() -> None:
    assert decode('{"type":"text","text":"é"}', ContentBlock) == text("é")
    assert decode(b'{"type":"text","text":"x"}', ContentBlock) == text("x")
    assert decode(b'{"kind":"stop"}', FinishReason) == StopFinish()


def test_to_json_is_plain_data() -> None:
    value = to_json([text("a"), TextDeltaChunk(index=0, text="b")])
    assert value == [{"type": "text", "text": "a"}, {"type": "text-delta", "index": 0, "text": "b"}]
    assert type(value[0]) is dict


def test_variant_tag_names_known_and_unknown_variants() -> None:
    assert variant_tag(text("x")) == "text"
    assert variant_tag(StopFinish()) == "stop"
    assert variant_tag(ToolCallBlock(id="c", name="n", arguments="")) == "tool-call"
    assert variant_tag(Message(role="user", content=())) is None  # a struct that is no variant
    assert variant_tag(msgspec.Raw(b'{"kind":"later"}')) == "later"
    assert variant_tag(msgspec.Raw(b'{"type":5}')) is None
    assert variant_tag(msgspec.Raw(b"[1]")) is None
    assert variant_tag("text") is None
