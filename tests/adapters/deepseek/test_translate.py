"""SPEC §10 translation: ``translate``, ``map_finish_reason``, ``map_usage`` over payload iterators."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dsh.adapters.deepseek import DONE, StreamTranslator, map_finish_reason, map_usage, translate
from dsh.core.errors import LlmError
from dsh.core.llm import BlockAssembler, Message, StopFinish, StreamChunk, TextBlock, to_json
from tests.adapters.deepseek.helpers import collect, kinds, source


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **top: Any) -> str:
    """One wire chunk with a single choice (or ``choices=[]`` via ``top``)."""
    body: dict[str, Any] = {"id": "x", "object": "chat.completion.chunk", "model": "deepseek-v4-flash"}
    body["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    body.update(top)
    return json.dumps(body)


def call(index: int, arguments: str | None, call_id: str | None = None, name: str | None = None) -> dict[str, Any]:
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    entry: dict[str, Any] = {"index": index, "function": function}
    if call_id is not None:
        entry["id"] = call_id
        entry["type"] = "function"
    return entry


async def run_typed(*payloads: str) -> list[StreamChunk]:
    return await collect(translate(source(payloads)))


async def run(*payloads: str) -> list[Any]:
    """The chunks of ``payloads`` in their JSON form."""
    return to_json(await run_typed(*payloads))  # type: ignore[no-any-return]


USAGE = {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}


# ------------------------------------------------------------------------ text
async def test_streams_a_text_block_and_defers_finish_to_DONE() -> None:
    """translate: text / streams a text block and defers finish to DONE"""
    out = await run(
        chunk({"content": "Hel"}),
        chunk({"content": "lo"}),
        chunk({}, "stop", usage=USAGE),
        DONE,
    )
    assert out == [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "Hel"},
        {"type": "text-delta", "index": 0, "text": "lo"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Hello"}},
        {"type": "usage", "usage": {"inputTokens": 3, "outputTokens": 1}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]


async def test_assembles_into_the_message_BlockAssembler_expects() -> None:
    """translate: text / assembles into the message BlockAssembler expects"""
    assembler = BlockAssembler()
    for item in await run_typed(
        chunk({"role": "assistant", "content": ""}), chunk({"content": "hi"}), chunk({}, "stop"), DONE
    ):
        assembler.push(item)
    result = assembler.result()
    assert result.message == Message("assistant", (TextBlock("hi"),))
    assert result.finish == StopFinish()
    assert result.usage is None


# ------------------------------------------------------------------- reasoning
async def test_does_NOT_open_a_reasoning_block_for_the_empty_first_chunk_signature() -> None:
    """translate: reasoning / does NOT open a reasoning block for the empty first-chunk signature"""
    out = await run(chunk({"role": "assistant", "content": None, "reasoning_content": ""}), DONE)
    assert out == [{"type": "finish", "reason": {"kind": "stop"}}]


async def test_streams_reasoning_then_text_as_separate_blocks() -> None:
    """translate: reasoning / streams reasoning then text as separate blocks"""
    out = await run(
        chunk({"content": None, "reasoning_content": ""}),
        chunk({"content": None, "reasoning_content": "Let me "}),
        chunk({"content": None, "reasoning_content": "think."}),
        chunk({"content": "Answer", "reasoning_content": None}),
        chunk({}, "stop"),
        DONE,
    )
    assert out == [
        {"type": "block-start", "index": 0, "blockType": "reasoning"},
        {"type": "reasoning-delta", "index": 0, "text": "Let me "},
        {"type": "reasoning-delta", "index": 0, "text": "think."},
        {"type": "block-start", "index": 1, "blockType": "text"},
        {"type": "text-delta", "index": 1, "text": "Answer"},
        {"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "Let me think."}},
        {"type": "block-end", "index": 1, "block": {"type": "text", "text": "Answer"}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]


async def test_treats_an_entirely_absent_reasoning_content_field_as_non_thinking() -> None:
    """translate: reasoning / treats an entirely absent reasoning_content field as non-thinking"""
    out = await run(chunk({"content": "plain"}), DONE)
    assert kinds(out) == ["block-start", "text-delta", "block-end", "finish"]
    assert out[0] == {"type": "block-start", "index": 0, "blockType": "text"}


# ------------------------------------------------------------------ tool calls
async def test_reassembles_a_tool_call_from_fragmented_argument_deltas_live_capture_shape() -> None:
    """translate: tool calls / reassembles a tool call from fragmented argument deltas (live capture shape)"""
    fragments = ['{"', "city", '":', ' "', "Paris", '"}']
    payloads = [chunk({"tool_calls": [call(0, piece, "call_0", "get_weather")]}) for piece in fragments]
    out = await run(*payloads, chunk({}, "tool_calls"), DONE)
    assert out[0] == {"type": "block-start", "index": 0, "blockType": "tool-call"}
    deltas = [c for c in out if c["type"] == "tool-call-delta"]
    assert [d["argumentsDelta"] for d in deltas] == fragments
    assert all(d["id"] == "call_0" and d["name"] == "get_weather" for d in deltas)
    assert out[-2:] == [
        {
            "type": "block-end",
            "index": 0,
            "block": {"type": "tool-call", "id": "call_0", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        },
        {"type": "finish", "reason": {"kind": "tool-calls"}},
    ]


async def test_disambiguates_parallel_tool_calls_by_wire_index() -> None:
    """translate: tool calls / disambiguates parallel tool calls by wire index"""
    out = await run(
        chunk({"tool_calls": [call(0, '{"a":', "c0", "first")]}),
        chunk({"tool_calls": [call(1, '{"b":', "c1", "second")]}),
        chunk({"tool_calls": [call(0, "1}"), call(1, "2}")]}),
        chunk({}, "tool_calls"),
        DONE,
    )
    assert [c for c in out if c["type"] == "tool-call-delta"] == [
        {"type": "tool-call-delta", "index": 0, "id": "c0", "name": "first", "argumentsDelta": '{"a":'},
        {"type": "tool-call-delta", "index": 1, "id": "c1", "name": "second", "argumentsDelta": '{"b":'},
        {"type": "tool-call-delta", "index": 0, "id": "c0", "name": "first", "argumentsDelta": "1}"},
        {"type": "tool-call-delta", "index": 1, "id": "c1", "name": "second", "argumentsDelta": "2}"},
    ]
    assert [c["block"] for c in out if c["type"] == "block-end"] == [
        {"type": "tool-call", "id": "c0", "name": "first", "arguments": '{"a":1}'},
        {"type": "tool-call", "id": "c1", "name": "second", "arguments": '{"b":2}'},
    ]


async def test_interleaves_text_and_tool_call_blocks_with_distinct_indices() -> None:
    """translate: tool calls / interleaves text and tool-call blocks with distinct indices"""
    out = await run(
        chunk({"content": "Checking."}),
        chunk({"tool_calls": [call(0, "{}", "c0", "look")]}),
        chunk({"content": " More."}),
        chunk({"tool_calls": [call(1, "{}", "c1", "look")]}),
        chunk({}, "tool_calls"),
        DONE,
    )
    starts = [(c["index"], c["blockType"]) for c in out if c["type"] == "block-start"]
    assert starts == [(0, "text"), (1, "tool-call"), (2, "tool-call")]
    ends = [(c["index"], c["block"]["type"]) for c in out if c["type"] == "block-end"]
    assert ends == [(0, "text"), (1, "tool-call"), (2, "tool-call")]
    assert {c["index"] for c in out if c["type"] == "text-delta"} == {0}


# ---------------------------------------------------------- finish and usage
async def test_takes_usage_from_a_trailing_usage_only_chunk_docs_shape() -> None:
    """translate: finish and usage handling / takes usage from a trailing usage-only chunk (docs shape)"""
    trailing = json.dumps({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}})
    out = await run(chunk({"content": "x"}), chunk({}, "stop", usage=None), trailing, DONE)
    assert out[-2:] == [
        {"type": "usage", "usage": {"inputTokens": 10, "outputTokens": 5}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]


async def test_last_usage_wins_when_both_attached_and_trailing_arrive() -> None:
    """translate: finish and usage handling / last usage wins when both attached and trailing arrive"""
    trailing = json.dumps({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 8}})
    out = await run(chunk({}, "stop", usage={"prompt_tokens": 1, "completion_tokens": 1}), trailing, DONE)
    assert [c for c in out if c["type"] == "usage"] == [
        {"type": "usage", "usage": {"inputTokens": 9, "outputTokens": 8}}
    ]


async def test_defaults_to_finish_stop_when_no_finish_reason_ever_arrives() -> None:
    """translate: finish and usage handling / defaults to finish stop when no finish_reason ever arrives"""
    out = await run(chunk({"content": "x"}), DONE)
    assert out[-1] == {"type": "finish", "reason": {"kind": "stop"}}


async def test_omits_the_usage_chunk_when_none_arrived() -> None:
    """translate: finish and usage handling / omits the usage chunk when none arrived"""
    out = await run(chunk({"content": "x"}, "length"), DONE)
    assert "usage" not in kinds(out)
    assert out[-1] == {"type": "finish", "reason": {"kind": "max-tokens"}}


async def test_handles_chunks_with_no_choices_at_all() -> None:
    """translate: finish and usage handling / handles chunks with no choices at all"""
    assert await run("{}", json.dumps({"choices": None}), json.dumps({"choices": "nope"}), DONE) == [
        {"type": "finish", "reason": {"kind": "stop"}}
    ]


# ----------------------------------------------------------------------- errors
async def test_throws_MALFORMED_RESPONSE_for_invalid_JSON_payloads() -> None:
    """translate: errors / throws MALFORMED_RESPONSE for invalid JSON payloads"""
    bad = "{not json " + "x" * 200
    with pytest.raises(LlmError) as caught:
        await run(bad, DONE)
    assert caught.value.code == "MALFORMED_RESPONSE"
    assert str(caught.value) == f"malformed SSE payload: {bad[:120]}"
    for not_an_object in ("[1,2]", "42", "null", '"text"'):
        with pytest.raises(LlmError, match="malformed SSE payload"):
            await run(not_an_object, DONE)


async def test_throws_STREAM_CLOSED_when_the_payload_source_ends_without_DONE() -> None:
    """translate: errors / throws STREAM_CLOSED when the payload source ends without DONE"""
    seen: list[StreamChunk] = []
    with pytest.raises(LlmError) as caught:
        async for item in translate(source([chunk({"content": "partial"})])):
            seen.append(item)
    assert caught.value.code == "STREAM_CLOSED"
    assert str(caught.value) == "SSE payload stream ended without [DONE]"
    assert kinds(seen) == ["block-start", "text-delta"]


# ------------------------------------------------------------ mapFinishReason
@pytest.mark.parametrize(
    ("reason", "expected"),
    [("stop", {"kind": "stop"}), ("tool_calls", {"kind": "tool-calls"}), ("length", {"kind": "max-tokens"})],
)
def test_maps_reason(reason: str, expected: dict[str, str]) -> None:
    """mapFinishReason / maps %s"""
    assert to_json(map_finish_reason(reason)) == expected


@pytest.mark.parametrize(
    ("reason", "code"),
    [
        ("content_filter", "CONTENT_FILTER"),
        ("insufficient_system_resource", "INSUFFICIENT_SYSTEM_RESOURCE"),
        ("mystery_reason", "MYSTERY_REASON"),
    ],
)
def test_maps_reason_to_an_error_kind_with_the_wire_code(reason: str, code: str) -> None:
    """mapFinishReason / maps %s to an error kind with the wire code"""
    assert to_json(map_finish_reason(reason)) == {"kind": "error", "message": f"model stopped: {reason}", "code": code}


async def test_an_unknown_finish_reason_ends_the_stream_in_band() -> None:
    """an unknown finish_reason becomes the in-band error finish at DONE"""
    out = await run(chunk({"content": "x"}, "content_filter"), DONE)
    assert out[-1] == {
        "type": "finish",
        "reason": {"kind": "error", "message": "model stopped: content_filter", "code": "CONTENT_FILTER"},
    }


# ------------------------------------------------------------------- mapUsage
def test_maps_the_full_live_capture_shape() -> None:
    """mapUsage / maps the full live-capture shape"""
    wire = {
        "prompt_tokens": 283,
        "completion_tokens": 30,
        "total_tokens": 313,
        "prompt_tokens_details": {"cached_tokens": 256},
        "completion_tokens_details": {"reasoning_tokens": 24},
        "prompt_cache_hit_tokens": 256,
        "prompt_cache_miss_tokens": 27,
    }
    mapped = to_json(map_usage(wire))
    assert mapped == {"inputTokens": 27, "outputTokens": 30, "cacheReadTokens": 256, "reasoningTokens": 24}
    assert list(mapped) == ["inputTokens", "outputTokens", "cacheReadTokens", "reasoningTokens"]


def test_falls_back_to_prompt_cache_hit_tokens_when_details_are_absent() -> None:
    """mapUsage / falls back to prompt_cache_hit_tokens when details are absent"""
    assert to_json(map_usage({"prompt_tokens": 100, "completion_tokens": 7, "prompt_cache_hit_tokens": 64})) == {
        "inputTokens": 36,
        "outputTokens": 7,
        "cacheReadTokens": 64,
    }
    zero = to_json(
        map_usage({"prompt_tokens": 5, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 0}})
    )
    assert zero == {"inputTokens": 5, "outputTokens": 1, "cacheReadTokens": 0}


def test_omits_optional_fields_when_the_wire_omits_them() -> None:
    """mapUsage / omits optional fields when the wire omits them"""
    assert to_json(map_usage({"prompt_tokens": 3, "completion_tokens": 1})) == {"inputTokens": 3, "outputTokens": 1}
    assert to_json(map_usage({"prompt_tokens_details": None, "completion_tokens_details": {}})) == {
        "inputTokens": 0,
        "outputTokens": 0,
    }


# ---------------------------------------------------- defensive tool-call branches
async def test_handles_deltas_that_never_carry_id_or_name_empty_string_fallbacks() -> None:
    """translate: defensive tool-call branches / handles deltas that never carry id or name (empty-string fallbacks)"""
    out = await run(chunk({"tool_calls": [call(0, "{}")]}), DONE)
    assert out == [
        {"type": "block-start", "index": 0, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 0, "id": "", "argumentsDelta": "{}"},
        {"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": "", "name": "", "arguments": "{}"}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]


async def test_handles_tool_call_deltas_with_a_function_object_but_no_arguments_field() -> None:
    """translate: defensive tool-call branches / handles tool_call deltas with a function object but no arguments field"""
    out = await run(chunk({"tool_calls": [call(0, None, "c", "f")]}), chunk({"tool_calls": [call(0, "{}")]}), DONE)
    deltas = [c for c in out if c["type"] == "tool-call-delta"]
    assert deltas == [
        {"type": "tool-call-delta", "index": 0, "id": "c", "name": "f", "argumentsDelta": ""},
        {"type": "tool-call-delta", "index": 0, "id": "c", "name": "f", "argumentsDelta": "{}"},
    ]


async def test_handles_tool_call_deltas_with_no_function_object_at_all() -> None:
    """translate: defensive tool-call branches / handles tool_call deltas with no function object at all"""
    out = await run(chunk({"tool_calls": [{"index": 0, "id": "c"}]}), DONE)
    assert out[1] == {"type": "tool-call-delta", "index": 0, "id": "c", "argumentsDelta": ""}
    assert out[2] == {
        "type": "block-end",
        "index": 0,
        "block": {"type": "tool-call", "id": "c", "name": "", "arguments": ""},
    }


async def test_tolerates_odd_shapes_without_failing_the_stream() -> None:
    """tool calls without a wire index key by position; non-object choices, deltas and calls are ignored"""
    out = await run(
        chunk({"tool_calls": [{"function": {"name": "a", "arguments": "1"}}, {"function": {"arguments": "2"}}]}),
        chunk({"tool_calls": [{"function": {"arguments": "3"}}, "junk"]}),
        json.dumps({"choices": ["junk", {"delta": "junk", "finish_reason": 7}], "usage": None}),
        chunk({"tool_calls": "junk"}),
        DONE,
    )
    assert [c["block"] for c in out if c["type"] == "block-end"] == [
        {"type": "tool-call", "id": "", "name": "a", "arguments": "13"},
        {"type": "tool-call", "id": "", "name": "", "arguments": "2"},
    ]
    assert out[-1] == {"type": "finish", "reason": {"kind": "stop"}}


# --------------------------------------------------------------- StreamTranslator
def test_the_synchronous_translator_appends_to_the_callers_list_and_reports_DONE() -> None:
    """StreamTranslator.feed appends each payload's chunks and returns True only at [DONE]"""
    translator = StreamTranslator()
    out: list[StreamChunk] = []
    assert translator.feed(chunk({"content": "a"}), out) is False
    assert kinds(out) == ["block-start", "text-delta"]
    assert translator.feed(chunk({}, "stop"), out) is False
    assert len(out) == 2  # a finish_reason alone yields nothing until [DONE]
    with pytest.raises(LlmError, match="malformed SSE payload"):
        translator.feed("{oops", out)
    assert len(out) == 2  # nothing of the bad payload was appended
    assert translator.feed(DONE, out) is True
    assert kinds(out) == ["block-start", "text-delta", "block-end", "finish"]
