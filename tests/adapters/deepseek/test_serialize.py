"""SPEC §10 request mapping: ``serialize_messages`` and ``serialize_request``."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from dsh.adapters.deepseek import RequestDefaults, serialize_messages, serialize_request
from dsh.adapters.deepseek.serialize import serialize_message
from dsh.core.errors import LlmError
from dsh.core.llm import (
    ContentBlock,
    GenerateOptions,
    ImageBlock,
    Message,
    ReasoningBlock,
    Role,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    encode,
    text,
    to_json,
)
from tests.adapters.deepseek.helpers import WIRE_KEY_ORDER, options, user


def call(call_id: str, name: str, arguments: str) -> ToolCallBlock:
    return ToolCallBlock(id=call_id, name=name, arguments=arguments)


def result(call_id: str, *texts: str) -> ToolResultBlock:
    return ToolResultBlock(tool_call_id=call_id, content=tuple(text(t) for t in texts))


def message(role: Role, *blocks: ContentBlock) -> Message:
    return Message(role, blocks)


def wire_of(messages: list[Message]) -> Any:
    """The wire messages of ``messages`` in their JSON form."""
    return to_json(serialize_messages(messages))


def body_of(opts: GenerateOptions, defaults: RequestDefaults | None = None) -> Any:
    """The request body for ``opts`` in its JSON form (keys in wire order)."""
    return to_json(serialize_request(opts, defaults))


# ------------------------------------------------------------------ serializeMessages
def test_maps_user_text_to_string_content() -> None:
    """maps user text to string content"""
    assert wire_of([message("user", text("hello "), text("world"))]) == [{"role": "user", "content": "hello world"}]


def test_maps_system_role_messages_in_history() -> None:
    """maps system-role messages in history"""
    history = [message("system", text("be brief")), user("hi")]
    assert wire_of(history) == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
    ]


def test_maps_plain_assistant_text_without_reasoning_content() -> None:
    """maps plain assistant text without reasoning_content"""
    assistant = message("assistant", ReasoningBlock("thinking"), text("Hel"), text("lo"))
    assert wire_of([assistant]) == [{"role": "assistant", "content": "Hello"}]


def test_passes_reasoning_content_back_on_tool_call_turns_official_passback_rule() -> None:
    """passes reasoning_content back on tool-call turns (official passback rule)"""
    assistant = message(
        "assistant", ReasoningBlock("need "), ReasoningBlock("weather"), call("call_1", "weather", '{"city":"Paris"}')
    )
    wire = wire_of([assistant])
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
    assistant = message("assistant", text("checking"), call("a", "first", "{}"), call("b", "second", '{"x":1}'))
    (wire,) = wire_of([assistant])
    assert wire["role"] == "assistant"
    assert wire["content"] == "checking"
    assert "reasoning_content" not in wire
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in wire["tool_calls"]] == [
        ("a", "first", "{}"),
        ("b", "second", '{"x":1}'),
    ]


def test_turns_tool_results_into_role_tool_messages() -> None:
    """turns tool results into role:tool messages"""
    assert wire_of([message("user", result("a", "sunny, ", "21C"), result("b", "ok"))]) == [
        {"role": "tool", "tool_call_id": "a", "content": "sunny, 21C"},
        {"role": "tool", "tool_call_id": "b", "content": "ok"},
    ]


def test_sends_a_sentinel_for_empty_tool_result_content() -> None:
    """sends a sentinel for empty tool-result content"""
    image = ImageBlock(url="data:image/png;base64,AA==")
    with_image = ToolResultBlock(tool_call_id="b", content=(image,))
    assert wire_of([message("user", result("a"), with_image)]) == [
        {"role": "tool", "tool_call_id": "a", "content": "(no output)"},
        {"role": "tool", "tool_call_id": "b", "content": "(no output)"},
    ]


def test_splits_mixed_user_text_plus_tool_results_into_separate_wire_messages() -> None:
    """splits mixed user text + tool results into separate wire messages"""
    assert wire_of([message("user", result("a", "42"), text("now continue"))]) == [
        {"role": "user", "content": "now continue"},
        {"role": "tool", "tool_call_id": "a", "content": "42"},
    ]


def test_skips_image_blocks_documented_MVP_limitation() -> None:
    """skips image blocks (documented MVP limitation) and blocks this version does not know"""
    with_image = message("user", text("what is this?"), ImageBlock(url="https://x/y.png", mime_type="image/png"))
    rogue = message("assistant", msgspec.Raw(b'{"type":"rogue","x":1}'), text("a"))
    alone = message("system", msgspec.Raw(b'{"type":"rogue"}'))
    assert wire_of([with_image, rogue, alone]) == [
        {"role": "user", "content": "what is this?"},
        {"role": "assistant", "content": "a"},
        {"role": "system", "content": ""},
    ]


def test_emits_an_empty_user_message_rather_than_dropping_block_less_messages() -> None:
    """emits an empty user message rather than dropping block-less messages"""
    assert wire_of([message("user")]) == [{"role": "user", "content": ""}]


def test_serialize_message_maps_one_message_and_serialize_messages_concatenates() -> None:
    """one message maps to one or more wire messages; a history maps to their concatenation in order"""
    history = [
        message("system", text("rules")),
        user("hi"),
        message("assistant", ReasoningBlock("r"), call("a", "f", "{}")),
        message("user", text("and"), result("a", "out")),
        message("user", result("b")),
    ]
    mapped = [serialize_message(item) for item in history]
    assert [len(wire) for wire in mapped] == [1, 1, 1, 2, 1]
    assert to_json(mapped[3]) == [
        {"role": "user", "content": "and"},
        {"role": "tool", "tool_call_id": "a", "content": "out"},
    ]
    assert serialize_messages(history) == [wire for group in mapped for wire in group]


# ------------------------------------------------------------------- serializeRequest
def test_always_streams_with_usage_and_maps_the_basics() -> None:
    """always streams with usage and maps the basics"""
    body = body_of(options("deepseek-v4-pro", "hi"))
    assert body == {
        "model": "deepseek-v4-pro",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    assert list(body) == ["model", "messages", "stream", "stream_options"]


def test_prepends_the_system_prompt() -> None:
    """prepends the system prompt"""
    body = body_of(options(system="You are terse."))
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hi"},
    ]
    empty = body_of(options(system=""))
    assert empty["messages"][0] == {"role": "system", "content": ""}


def test_maps_sampling_params_and_stop_sequences() -> None:
    """maps sampling params and stop sequences"""
    body = body_of(options(temperature=0.2, max_tokens=256, stop=["END", "\n\n"]))
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 256
    assert body["stop"] == ["END", "\n\n"]
    assert list(body)[-3:] == ["temperature", "max_tokens", "stop"]
    zero = body_of(options(temperature=0, max_tokens=0, stop=[]))
    assert (zero["temperature"], zero["max_tokens"], zero["stop"]) == (0, 0, [])


def test_maps_tools_with_strict_passthrough() -> None:
    """maps tools with strict passthrough"""
    params = {"type": "object", "properties": {"q": {"type": "string"}}}
    body = body_of(
        options(
            tools=[
                ToolSchema("strict_on", "a", params, strict=True),
                ToolSchema("strict_off", "b", params, strict=False),
                ToolSchema("plain", "c", params),
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
    assert "tools" not in body_of(options(tools=[]))


def test_applies_adapter_defaults_for_thinking_and_effort() -> None:
    """applies adapter defaults for thinking and effort"""
    tool = ToolSchema("t", "d", {"type": "object"})
    body = body_of(
        options(tools=[tool], temperature=1, max_tokens=9, stop=["x"]),
        RequestDefaults(thinking="enabled", reasoning_effort="max"),
    )
    assert body["thinking"] == {"type": "enabled"}
    assert body["reasoning_effort"] == "max"
    assert list(body) == WIRE_KEY_ORDER


def test_omits_thinking_fields_when_unset_provider_default_applies() -> None:
    """omits thinking fields when unset (provider default applies)"""
    for defaults in (None, RequestDefaults()):
        body = body_of(options(), defaults)
        assert "thinking" not in body
        assert "reasoning_effort" not in body
    only_thinking = body_of(options(), RequestDefaults(thinking="disabled"))
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
    for content in ((), (ReasoningBlock("hmm"),)):
        wire = serialize_messages([Message("assistant", content)])
        assert to_json(wire) == [{"role": "assistant", "content": None}]
        assert encode(wire[0]) == b'{"role":"assistant","content":null}'


def test_serializes_tool_call_turns_with_empty_string_content_not_null() -> None:
    """serializes tool-call turns with empty string content, not null"""
    (wire,) = wire_of([message("assistant", call("c", "f", "{}"))])
    assert wire["content"] == ""
    assert "reasoning_content" not in wire


def test_request_body_is_json_ready_and_keeps_non_ascii() -> None:
    """the request body serializes compactly with non-ASCII text kept as is"""
    opts = GenerateOptions(model="m", messages=[user("héllo 🌍")])
    assert '"content":"héllo 🌍"' in encode(serialize_request(opts)).decode()


def test_the_wire_values_are_immutable() -> None:
    """the request body is frozen: it is built per call and never edited"""
    body = serialize_request(options())
    with pytest.raises(AttributeError):
        body.model = "other"  # type: ignore[misc]
