"""SDK chunks to stream chunks (SPEC §11 ``toStreamChunks`` / ``mapStopReason`` / ``mapUsage`` titles).

The SDK hands over ``ChatCompletionChunk`` models; these tests feed such models to
:class:`ChunkTranslator` directly (malformed wire data is covered over HTTP in
``test_adapter.py``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpx2
import openai
import pytest
from openai.types import CompletionUsage

from dsh.adapters.openai import STREAM_CLOSED, ChunkTranslator, map_finish_reason, map_usage, stream_failure
from dsh.core.llm import (
    AbortedFinish,
    BlockAssembler,
    ErrorFinish,
    FinishReason,
    ReasoningBlock,
    StreamChunk,
    TextBlock,
    ToolCallBlock,
    ToolCallsFinish,
    to_json,
)
from tests.adapters.openai.helpers import delta, kinds, sdk_chunk


def run_typed(*chunks: object, end: str = "close", reason: FinishReason | None = None) -> list[StreamChunk]:
    """Feed ``chunks`` through one translator, then close it (or fail it with ``reason``)."""
    translator = ChunkTranslator()
    out: list[StreamChunk] = []
    for chunk in chunks:
        out.extend(translator.feed(chunk))
    if end == "close":
        out.extend(translator.close())
    else:
        assert reason is not None
        out.extend(translator.fail(reason))
    return out


def run(*chunks: object, end: str = "close", reason: FinishReason | None = None) -> list[Any]:
    """:func:`run_typed`, the chunks in their JSON form."""
    return to_json(run_typed(*chunks, end=end, reason=reason))  # type: ignore[no-any-return]


def assembled(chunks: Iterable[StreamChunk]) -> BlockAssembler:
    assembler = BlockAssembler()
    for chunk in chunks:
        assembler.push(chunk)
    return assembler


def usage(prompt: int, completion: int, **extra: Any) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion, **extra}


# ------------------------------------------------------------------------- toStreamChunks
def test_maps_text_events_to_text_blocks() -> None:
    """toStreamChunks / maps text events to text blocks"""
    chunks = run(
        sdk_chunk(delta(role="assistant", content="")),
        sdk_chunk(delta(content="Hel")),
        sdk_chunk(delta(content="lo")),
        sdk_chunk(delta("stop")),
        sdk_chunk(usage=usage(4, 2)),
    )
    assert chunks == [
        {"type": "block-start", "index": 0, "blockType": "text"},
        {"type": "text-delta", "index": 0, "text": "Hel"},
        {"type": "text-delta", "index": 0, "text": "lo"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "Hello"}},
        {"type": "usage", "usage": {"inputTokens": 4, "outputTokens": 2}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]


def test_maps_thinking_events_to_reasoning_blocks() -> None:
    """toStreamChunks / maps thinking events to reasoning blocks"""
    inputs = (
        sdk_chunk(delta(content=None, reasoning_content="")),  # the first thinking chunk opens nothing
        sdk_chunk(delta(content=None, reasoning_content="Let me ")),
        sdk_chunk(delta(content=None, reasoning_content="think.")),
        sdk_chunk(delta(content="42", reasoning_content=None)),
        sdk_chunk(delta("stop")),
    )
    chunks = run(*inputs)
    assert kinds(chunks) == [
        "block-start",
        "reasoning-delta",
        "reasoning-delta",
        "block-start",
        "text-delta",
        "block-end",
        "block-end",
        "finish",
    ]
    assert chunks[0] == {"type": "block-start", "index": 0, "blockType": "reasoning"}
    assert chunks[3] == {"type": "block-start", "index": 1, "blockType": "text"}
    assert assembled(run_typed(*inputs)).message().content == (ReasoningBlock("Let me think."), TextBlock("42"))


def test_maps_tool_call_events_re_stringifying_parsed_arguments() -> None:
    """toStreamChunks / maps tool-call events, re-stringifying parsed arguments

    The SDK route never parses arguments: the fragments join into the raw string as the
    model produced it (spaces included), for each call by wire index.
    """
    first = {"index": 0, "id": "call_a", "type": "function", "function": {"name": "weather", "arguments": '{"city": '}}
    second = {"index": 1, "id": "call_b", "type": "function", "function": {"name": "time", "arguments": "{}"}}
    inputs = (
        sdk_chunk(delta(content="Checking.")),
        sdk_chunk(delta(tool_calls=[first])),
        sdk_chunk(delta(tool_calls=[second, {"index": 0, "function": {"arguments": '"Paris"}'}}])),
        sdk_chunk(delta("tool_calls")),
    )
    chunks = run(*inputs)
    assert chunks[3] == {
        "type": "tool-call-delta",
        "index": 1,
        "id": "call_a",
        "name": "weather",
        "argumentsDelta": '{"city": ',
    }
    assert chunks[6] == {
        "type": "tool-call-delta",
        "index": 1,
        "id": "call_a",
        "name": "weather",
        "argumentsDelta": '"Paris"}',
    }
    result = assembled(run_typed(*inputs)).result()
    assert result.message.content == (
        TextBlock("Checking."),
        ToolCallBlock(id="call_a", name="weather", arguments='{"city": "Paris"}'),
        ToolCallBlock(id="call_b", name="time", arguments="{}"),
    )
    assert result.finish == ToolCallsFinish()


def test_tolerates_toolcall_start_with_a_missing_partial_entry() -> None:
    """toStreamChunks / tolerates toolcall_start with a missing partial entry

    Equivalent: a tool-call delta without id, name or function object still opens a
    block, with ``''`` fallbacks.
    """
    chunks = run(sdk_chunk(delta(tool_calls=[{"index": 0}])), sdk_chunk(delta("tool_calls")))
    assert chunks[1] == {"type": "tool-call-delta", "index": 0, "id": "", "argumentsDelta": ""}
    assert chunks[2] == {
        "type": "block-end",
        "index": 0,
        "block": {"type": "tool-call", "id": "", "name": "", "arguments": ""},
    }


def test_maps_error_events_to_error_finish_chunks_in_stream_error_style() -> None:
    """toStreamChunks / maps error events to error finish chunks (in-stream error style)"""
    reason = ErrorFinish(message="overloaded", code="SERVER")
    chunks = run(sdk_chunk(delta(content="part")), sdk_chunk(usage=usage(3, 1)), end="fail", reason=reason)
    assert chunks[-2:] == [
        {"type": "usage", "usage": {"inputTokens": 3, "outputTokens": 1}},
        {"type": "finish", "reason": {"kind": "error", "message": "overloaded", "code": "SERVER"}},
    ]
    assert "block-end" not in kinds(chunks)  # the incomplete block is left to the assembler


def test_maps_aborted_error_events_to_aborted_finish() -> None:
    """toStreamChunks / maps aborted error events to aborted finish"""
    chunks = run(sdk_chunk(delta(content="part")), end="fail", reason=AbortedFinish())
    assert chunks[-1] == {"type": "finish", "reason": {"kind": "aborted"}}
    assert kinds(chunks) == ["block-start", "text-delta", "finish"]


def test_rejects_a_stream_that_ends_without_done_or_error() -> None:
    """toStreamChunks / rejects a stream that ends without done or error

    In band: a stream that ends without a finish reason finishes with STREAM_CLOSED.
    """
    chunks = run(sdk_chunk(delta(content="cut")), sdk_chunk(usage=usage(2, 1)))
    assert chunks[-2:] == [
        {"type": "usage", "usage": {"inputTokens": 2, "outputTokens": 1}},
        {"type": "finish", "reason": to_json(STREAM_CLOSED)},
    ]
    assert STREAM_CLOSED.code == "STREAM_CLOSED"
    assert run() == [{"type": "finish", "reason": to_json(STREAM_CLOSED)}]


def test_omits_the_name_field_for_tool_calls_whose_partial_carried_an_empty_name() -> None:
    """toStreamChunks edge branches / omits the name field for tool calls whose partial carried an empty name"""
    call = {"index": 0, "id": "c1", "function": {"name": "", "arguments": "{}"}}
    chunks = run(sdk_chunk(delta(tool_calls=[call])), sdk_chunk(delta("tool_calls")))
    assert chunks[1] == {"type": "tool-call-delta", "index": 0, "id": "c1", "argumentsDelta": "{}"}
    assert "name" not in chunks[1]


def test_tolerates_a_toolcall_delta_with_no_preceding_toolcall_start() -> None:
    """toStreamChunks defensive branches / tolerates a toolcall_delta with no preceding toolcall_start

    Equivalent: argument fragments whose first fragment (with the id) never came
    assemble under id ``''``, and a name arriving late is remembered from then on.
    """
    chunks = run(
        sdk_chunk(delta(tool_calls=[{"index": 3, "function": {"arguments": '{"a"'}}])),
        sdk_chunk(delta(tool_calls=[{"index": 3, "function": {"name": "late", "arguments": ":1}"}}])),
        sdk_chunk(delta("tool_calls")),
    )
    assert chunks[1] == {"type": "tool-call-delta", "index": 0, "id": "", "argumentsDelta": '{"a"'}
    assert chunks[2] == {"type": "tool-call-delta", "index": 0, "id": "", "name": "late", "argumentsDelta": ":1}"}
    assert chunks[3]["block"] == {"type": "tool-call", "id": "", "name": "late", "arguments": '{"a":1}'}


def test_takes_usage_from_a_trailing_usage_only_chunk_and_the_last_usage_wins() -> None:
    """usage may ride on the finish chunk or a trailing chunk with no choices; the last one wins"""
    chunks = run(
        sdk_chunk(delta(content="x")),
        sdk_chunk(delta("stop"), usage=usage(9, 9)),
        sdk_chunk(usage=usage(5, 2)),
    )
    assert chunks[-2:] == [
        {"type": "usage", "usage": {"inputTokens": 5, "outputTokens": 2}},
        {"type": "finish", "reason": {"kind": "stop"}},
    ]


def test_a_finish_without_any_content_is_a_bare_finish() -> None:
    """a stream of only a finish reason yields just the finish"""
    assert run(sdk_chunk(delta("length"))) == [{"type": "finish", "reason": {"kind": "max-tokens"}}]


# ------------------------------------------------------------------ mapStopReason / mapUsage
@pytest.mark.parametrize(("wire", "kind"), [("stop", "stop"), ("length", "max-tokens"), ("tool_calls", "tool-calls")])
def test_maps_stop_reason(wire: str, kind: str) -> None:
    """mapStopReason / mapUsage / maps %s"""
    assert to_json(map_finish_reason(wire)) == {"kind": kind}


@pytest.mark.parametrize(
    ("wire", "code"),
    [
        ("content_filter", "CONTENT_FILTER"),
        ("insufficient_system_resource", "INSUFFICIENT_SYSTEM_RESOURCE"),
        ("aborted", "ABORTED"),
    ],
)
def test_maps_other_stop_reasons_to_an_error_kind_with_the_wire_code(wire: str, code: str) -> None:
    """unknown finish reasons become in-band errors with the upper-cased wire reason as code"""
    assert to_json(map_finish_reason(wire)) == {"kind": "error", "message": f"model stopped: {wire}", "code": code}


def test_defaults_the_error_message_when_pi_ai_omits_it() -> None:
    """mapStopReason / mapUsage / defaults the error message when pi-ai omits it

    Equivalent: an error event in the stream without message or code becomes the SDK's
    default message with code ``PROVIDER_ERROR``.
    """
    error = openai.APIError("An error occurred during streaming", httpx2.Request("POST", "http://x"), body={})
    assert to_json(stream_failure(error)) == {
        "kind": "error",
        "message": "An error occurred during streaming",
        "code": "PROVIDER_ERROR",
    }


def test_maps_cache_fields_only_when_nonzero() -> None:
    """mapStopReason / mapUsage / maps cache fields only when nonzero

    Cache hits and writes are also taken out of ``inputTokens`` (disjoint counts, SPEC §2.1).
    """
    full = CompletionUsage.model_validate(
        usage(283, 30, prompt_tokens_details={"cached_tokens": 256, "cache_write_tokens": 7})
    )
    assert to_json(map_usage(full)) == {
        "inputTokens": 20,
        "outputTokens": 30,
        "cacheReadTokens": 256,
        "cacheWriteTokens": 7,
    }
    zero = CompletionUsage.model_validate(
        usage(10, 2, prompt_tokens_details={"cached_tokens": 0, "cache_write_tokens": 0})
    )
    assert to_json(map_usage(zero)) == {"inputTokens": 10, "outputTokens": 2}
    bare = CompletionUsage.model_validate(usage(10, 2, completion_tokens_details={"reasoning_tokens": 8}))
    assert to_json(map_usage(bare)) == {"inputTokens": 10, "outputTokens": 2}  # reasoning is not reported separately


def test_falls_back_to_prompt_cache_hit_tokens_when_details_are_absent() -> None:
    """DeepSeek's top-level prompt_cache_hit_tokens (a model_extra) counts as the cache read"""
    hits = CompletionUsage.model_validate(usage(100, 5, prompt_cache_hit_tokens=64, prompt_cache_miss_tokens=36))
    assert to_json(map_usage(hits)) == {"inputTokens": 36, "outputTokens": 5, "cacheReadTokens": 64}
    no_count = CompletionUsage.model_validate(usage(100, 5, prompt_tokens_details={"audio_tokens": 0}))
    assert to_json(map_usage(no_count)) == {"inputTokens": 100, "outputTokens": 5}
