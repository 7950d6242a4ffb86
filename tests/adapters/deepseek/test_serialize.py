"""SPEC §10 request mapping: ``serialize_messages`` and ``serialize_request``."""

from __future__ import annotations

import json

import pytest

from dsh.adapters.deepseek import RequestDefaults, serialize_messages, serialize_request
from dsh.adapters.deepseek.serialize import serialize_message
from dsh.core.errors import LlmError
from dsh.core.llm import GenerateOptions, Message, ToolCallBlock, ToolResultBlock, text
from tests.adapters.deepseek.helpers import WIRE_KEY_ORDER, options, user


def call(call_id: str, name: str, arguments: str) -> ToolCallBlock:
    return {"type": "tool-call", "id": call_id, "name": name, "arguments": arguments}


def result(call_id: str, *texts: str) -> ToolResultBlock:
    return {"type": "tool-result", "toolCallId": call_id, "content": [text(t) for t in texts]}


# ------------------------------------------------------------------ serializeMessages
def test_maps_user_text_to_string_content() -> None:
    """maps user text to string content"""
    message: Message = {"role": "user", "content": [text("hello "), text("world")]}
    assert serialize_messages([message]) == [{"role": "user", "content": "hello world"}]


def test_maps_system_role_messages_in_history() -> None:
    """maps system-role messages in history"""
    history: list[Message] = [{"role": "system", "content": [text("be brief")]}, user("hi")]
    assert serialize_messages(history) == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
    ]


def test_maps_plain_assistant_text_without_reasoning_content() -> None:
    """maps plain assistant text without reasoning_content"""
    message: Message = {
        "role": "assistant",
        "content": [{"type": "reasoning", "text": "thinking"}, text("Hel"), text("lo")],
    }
    assert serialize_messages([message]) == [{"role": "assistant", "content": "Hello"}]


def test_passes_reasoning_content_back_on_tool_call_turns_official_passback_rule() -> None:
    """passes reasoning_content back on tool-call turns (official passback rule)"""
    message: Message = {
        "role": "assistant",
        "content": [
            {"type": "reasoning", "text": "need "},
            {"type": "reasoning", "text": "weather"},
            call("call_1", "weather", '{"city":"Paris"}'),
        ],
    }
    wire = serialize_messages([message])
    assert wire == [
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "need weather",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}}
            ],
        }
    ]
    assert list(wire[0]) == ["role", "content", "reasoning_content", "tool_calls"]


def test_serializes_parallel_tool_calls_in_order() -> None:
    """serializes parallel tool calls in order"""
    message: Message = {
        "role": "assistant",
        "content": [text("checking"), call("a", "first", "{}"), call("b", "second", '{"x":1}')],
    }
    (wire,) = serialize_messages([message])
    assert wire["role"] == "assistant"
    assert wire["content"] == "checking"
    assert "reasoning_content" not in wire
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in wire["tool_calls"]] == [
        ("a", "first", "{}"),
        ("b", "second", '{"x":1}'),
    ]


def test_turns_tool_results_into_role_tool_messages() -> None:
    """turns tool results into role:tool messages"""
    message: Message = {"role": "user", "content": [result("a", "sunny, ", "21C"), result("b", "ok")]}
    assert serialize_messages([message]) == [
        {"role": "tool", "tool_call_id": "a", "content": "sunny, 21C"},
        {"role": "tool", "tool_call_id": "b", "content": "ok"},
    ]


def test_sends_a_sentinel_for_empty_tool_result_content() -> None:
    """sends a sentinel for empty tool-result content"""
    image = {"type": "image", "url": "data:image/png;base64,AA=="}
    message: Message = {
        "role": "user",
        "content": [result("a"), {"type": "tool-result", "toolCallId": "b", "content": [image]}],  # type: ignore[list-item]
    }
    assert serialize_messages([message]) == [
        {"role": "tool", "tool_call_id": "a", "content": "(no output)"},
        {"role": "tool", "tool_call_id": "b", "content": "(no output)"},
    ]


def test_splits_mixed_user_text_plus_tool_results_into_separate_wire_messages() -> None:
    """splits mixed user text + tool results into separate wire messages"""
    message: Message = {"role": "user", "content": [result("a", "42"), text("now continue")]}
    assert serialize_messages([message]) == [
        {"role": "user", "content": "now continue"},
        {"role": "tool", "tool_call_id": "a", "content": "42"},
    ]


def test_skips_image_blocks_documented_MVP_limitation() -> None:
    """skips image blocks (documented MVP limitation)"""
    message: Message = {
        "role": "user",
        "content": [text("what is this?"), {"type": "image", "url": "https://x/y.png", "mimeType": "image/png"}],
    }
    rogue: Message = {"role": "assistant", "content": [{"type": "rogue", "x": 1}, text("a")]}  # type: ignore[list-item]
    assert serialize_messages([message, rogue]) == [
        {"role": "user", "content": "what is this?"},
        {"role": "assistant", "content": "a"},
    ]


def test_emits_an_empty_user_message_rather_than_dropping_block_less_messages() -> None:
    """emits an empty user message rather than dropping block-less messages"""
    assert serialize_messages([{"role": "user", "content": []}]) == [{"role": "user", "content": ""}]


def test_serialize_message_maps_one_message_and_serialize_messages_concatenates() -> None:
    """one message maps to one or more wire messages; a history maps to their concatenation in order"""
    history: list[Message] = [
        {"role": "system", "content": [text("rules")]},
        user("hi"),
        {"role": "assistant", "content": [{"type": "reasoning", "text": "r"}, call("a", "f", "{}")]},
        {"role": "user", "content": [text("and"), result("a", "out")]},
        {"role": "user", "content": [result("b")]},
    ]
    mapped = [serialize_message(message) for message in history]
    assert [len(wire) for wire in mapped] == [1, 1, 1, 2, 1]
    assert mapped[3] == [{"role": "user", "content": "and"}, {"role": "tool", "tool_call_id": "a", "content": "out"}]
    assert serialize_messages(history) == [wire for group in mapped for wire in group]


# ------------------------------------------------------------------- serializeRequest
def test_always_streams_with_usage_and_maps_the_basics() -> None:
    """always streams with usage and maps the basics"""
    body = serialize_request(options("deepseek-v4-pro", "hi"))
    assert body == {
        "model": "deepseek-v4-pro",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert list(body) == ["model", "messages", "stream", "stream_options"]


def test_prepends_the_system_prompt() -> None:
    """prepends the system prompt"""
    body = serialize_request(options(system="You are terse."))
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hi"},
    ]
    empty = serialize_request(options(system=""))
    assert empty["messages"][0] == {"role": "system", "content": ""}


def test_maps_sampling_params_and_stop_sequences() -> None:
    """maps sampling params and stop sequences"""
    body = serialize_request(options(temperature=0.2, max_tokens=256, stop=["END", "\n\n"]))
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 256
    assert body["stop"] == ["END", "\n\n"]
    assert list(body)[-3:] == ["temperature", "max_tokens", "stop"]
    zero = serialize_request(options(temperature=0, max_tokens=0, stop=[]))
    assert (zero["temperature"], zero["max_tokens"], zero["stop"]) == (0, 0, [])


def test_maps_tools_with_strict_passthrough() -> None:
    """maps tools with strict passthrough"""
    params = {"type": "object", "properties": {"q": {"type": "string"}}}
    body = serialize_request(
        options(
            tools=[
                {"name": "strict_on", "description": "a", "parameters": params, "strict": True},
                {"name": "strict_off", "description": "b", "parameters": params, "strict": False},
                {"name": "plain", "description": "c", "parameters": params},
            ]
        )
    )
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "strict_on", "description": "a", "parameters": params, "strict": True},
        },
        {
            "type": "function",
            "function": {"name": "strict_off", "description": "b", "parameters": params, "strict": False},
        },
        {"type": "function", "function": {"name": "plain", "description": "c", "parameters": params}},
    ]


def test_omits_an_empty_tools_array() -> None:
    """omits an empty tools array"""
    assert "tools" not in serialize_request(options(tools=[]))


def test_applies_adapter_defaults_for_thinking_and_effort() -> None:
    """applies adapter defaults for thinking and effort"""
    tool = {"name": "t", "description": "d", "parameters": {"type": "object"}}
    body = serialize_request(
        options(tools=[tool], temperature=1, max_tokens=9, stop=["x"]),
        RequestDefaults(thinking="enabled", reasoning_effort="max"),
    )
    assert body["thinking"] == {"type": "enabled"}
    assert body["reasoning_effort"] == "max"
    assert list(body) == WIRE_KEY_ORDER


def test_omits_thinking_fields_when_unset_provider_default_applies() -> None:
    """omits thinking fields when unset (provider default applies)"""
    for defaults in (None, RequestDefaults()):
        body = serialize_request(options(), defaults)
        assert "thinking" not in body
        assert "reasoning_effort" not in body
    only_thinking = serialize_request(options(), RequestDefaults(thinking="disabled"))
    assert only_thinking["thinking"] == {"type": "disabled"}
    assert "reasoning_effort" not in only_thinking


@pytest.mark.parametrize("prefill", [[], [text("Sure,")]])
def test_rejects_prefill_with_an_UNSUPPORTED_LlmError(prefill: list[object]) -> None:
    """rejects prefill with an UNSUPPORTED LlmError"""
    with pytest.raises(LlmError) as caught:
        serialize_request(options(prefill=prefill))
    assert caught.value.code == "UNSUPPORTED"
    assert str(caught.value) == (
        "prefill is not supported by the DeepSeek adapter (Beta chat-prefix completion is future work)"
    )


# ------------------------------------------------------- review fixes: assistant content
def test_serializes_a_content_less_tool_call_less_assistant_message_as_null_content() -> None:
    """serializes a content-less, tool-call-less assistant message as null content"""
    for content in ([], [{"type": "reasoning", "text": "hmm"}]):
        wire = serialize_messages([{"role": "assistant", "content": content}])  # type: ignore[typeddict-item]
        assert wire == [{"role": "assistant", "content": None}]
        assert json.dumps(wire[0], separators=(",", ":")) == '{"role":"assistant","content":null}'


def test_serializes_tool_call_turns_with_empty_string_content_not_null() -> None:
    """serializes tool-call turns with empty string content, not null"""
    (wire,) = serialize_messages([{"role": "assistant", "content": [call("c", "f", "{}")]}])
    assert wire["content"] == ""
    assert "reasoning_content" not in wire


def test_request_body_is_json_ready_and_keeps_non_ascii() -> None:
    """the request body serializes compactly with non-ASCII text kept as is"""
    opts = GenerateOptions(model="m", messages=[user("héllo 🌍")])
    encoded = json.dumps(serialize_request(opts), ensure_ascii=False, separators=(",", ":"))
    assert '"content":"héllo 🌍"' in encoded
