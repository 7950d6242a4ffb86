"""The otel plugin's pure parts: the environment rules, content rendering, log reading, usage attributes."""

from __future__ import annotations

import json

import pytest
from msgspec import Raw

from dsh.core.llm import (
    ErrorFinish,
    FinishChunk,
    ImageBlock,
    Message,
    ReasoningBlock,
    StopFinish,
    TextBlock,
    TextDeltaChunk,
    TokenUsage,
    ToolCallBlock,
    ToolCallsFinish,
    UsageChunk,
)
from dsh.core.session import (
    AssistantChunkData,
    AssistantChunkEvent,
    CompletedReason,
    Session,
    StepData,
    StepStartEvent,
    TurnEndData,
    TurnEndEvent,
)
from dsh.plugins.otel import capture_requested, exporter_requested
from dsh.plugins.otel.content import finish_name, input_messages, output_messages
from dsh.plugins.otel.tracer import TAIL_SCAN, logged_reason, request_tail, usage_attributes


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, None),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, "otlp"),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, "otlp"),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": ""}, None),
        ({"OTEL_TRACES_EXPORTER": "Console, otlp"}, "console"),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, None),
        ({"OTEL_TRACES_EXPORTER": " "}, None),
        ({"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "otlp"}, None),
        ({"OTEL_SDK_DISABLED": "false", "OTEL_TRACES_EXPORTER": "otlp"}, "otlp"),
    ],
)
def test_the_exporter_the_environment_asks_for(env: dict[str, str], expected: str | None) -> None:
    assert exporter_requested(env) == expected


@pytest.mark.parametrize(("value", "on"), [("true", True), ("SPAN_ONLY", True), ("1", True), ("false", False)])
def test_content_capture_follows_the_standard_variable(value: str, on: bool) -> None:
    assert capture_requested({"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": value}) is on
    assert capture_requested({}) is False


def test_messages_render_every_block_kind_the_conventions_name() -> None:
    message = Message(
        role="assistant",
        content=(
            ReasoningBlock(text="think"),
            TextBlock(text="hi"),
            ToolCallBlock(id="c", name="t", arguments="not json"),
            ImageBlock(url="data:image/png;base64,AA"),
            Raw(b'{"type":"future-block"}'),
        ),
    )
    assert json.loads(input_messages([message]))[0]["parts"] == [
        {"type": "reasoning", "content": "think"},
        {"type": "text", "content": "hi"},
        {"type": "tool_call", "id": "c", "name": "t", "arguments": "not json"},
        {"type": "uri", "modality": "image", "uri": "data:image/png;base64,AA"},
    ]
    assert json.loads(output_messages(message, None))[0].keys() == {"role", "parts"}


def test_finish_names_follow_the_conventions() -> None:
    assert finish_name(StopFinish()) == "stop"
    assert finish_name(ToolCallsFinish()) == "tool_calls"
    assert finish_name(ErrorFinish(message="x")) == "error"


def test_usage_attributes_count_cached_input_as_input() -> None:
    usage = TokenUsage(input_tokens=3, output_tokens=2, cache_read_tokens=5, cache_write_tokens=7)
    assert usage_attributes(usage) == {
        "gen_ai.usage.input_tokens": 15,
        "gen_ai.usage.output_tokens": 2,
        "gen_ai.usage.cache_read.input_tokens": 5,
        "gen_ai.usage.cache_creation.input_tokens": 7,
    }
    assert usage_attributes(None) == {}


def _chunk(session: Session, chunk: object) -> None:
    session.append(AssistantChunkEvent, AssistantChunkData(turn=1, step=1, chunk=chunk))  # type: ignore[arg-type]


def test_the_request_tail_is_read_from_the_last_chunks_only() -> None:
    session = Session("s")
    assert request_tail(session) == (None, None)
    session.append(StepStartEvent, StepData(turn=1, step=1))
    usage = TokenUsage(input_tokens=1, output_tokens=1)
    _chunk(session, UsageChunk(usage=usage))
    _chunk(session, FinishChunk(reason=StopFinish()))
    assert request_tail(session) == (usage, "stop")
    for _ in range(TAIL_SCAN):
        _chunk(session, TextDeltaChunk(index=0, text="x"))
    assert request_tail(session) == (None, None)


def test_the_logged_reason_of_a_turn() -> None:
    session = Session("s")
    assert logged_reason(session, 1) is None
    session.append(TurnEndEvent, TurnEndData(turn=1, reason=CompletedReason()))
    assert logged_reason(session, 1) == CompletedReason()
    assert logged_reason(session, 2) is None
