"""The SDK call built from ``GenerateOptions`` (SPEC §11 ``toPiContext`` titles, as SDK-mapping equivalents).

pi-ai converted the conversation into its own context object; this adapter maps it
straight to chat-completions message dicts. Each test keeps the reference title's
intent and asserts the SDK mapping's equivalent.
"""

from __future__ import annotations

import msgspec
import pytest

from dsh.adapters.openai import EMPTY_TOOL_RESULT, build_request, reasoning_fields, to_chat_messages, to_chat_tool
from dsh.core.errors import LlmError
from dsh.core.llm import (
    ContentBlock,
    GenerateOptions,
    ImageBlock,
    Message,
    ReasoningBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    text,
)
from tests.adapters.openai.helpers import options

WEATHER = ToolSchema(
    name="weather",
    description="Weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def call(call_id: str, name: str, arguments: str) -> ContentBlock:
    return ToolCallBlock(id=call_id, name=name, arguments=arguments)


def result(call_id: str, *content: ContentBlock, is_error: bool | msgspec.UnsetType = msgspec.UNSET) -> ContentBlock:
    return ToolResultBlock(tool_call_id=call_id, content=content, is_error=is_error)


def assistant(*content: ContentBlock) -> Message:
    return Message("assistant", content)


def user(*content: ContentBlock) -> Message:
    return Message("user", content)


# ---------------------------------------------------------------- toPiContext equivalents
def test_maps_system_prompt_user_text_and_tools() -> None:
    """toPiContext / maps system prompt, user text, and tools"""
    request = build_request(options("m-1", "hello", system="be brief", tools=[WEATHER]))
    assert request.model == "m-1"
    assert request.messages == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}]
    assert request.tools == [
        {
            "type": "function",
            "function": {"name": "weather", "description": "Weather for a city.", "parameters": WEATHER.parameters},
        }
    ]


def test_omits_empty_tools_and_absent_system_prompt() -> None:
    """toPiContext / omits empty tools and absent system prompt"""
    request = build_request(options(tools=[]))
    assert request.tools is None
    assert request.messages == [{"role": "user", "content": "hi"}]
    assert (request.temperature, request.max_tokens, request.stop) == (None, None, None)


def test_maps_assistant_text_reasoning_tool_call_blocks() -> None:
    """toPiContext / maps assistant text/reasoning/tool-call blocks"""
    turn = assistant(
        ReasoningBlock("need "),
        text("Checking."),
        ReasoningBlock("weather"),
        call("call_1", "weather", '{"city":"Paris"}'),
        call("call_2", "weather", '{"city":"Rome"}'),
    )
    assert to_chat_messages([turn]) == [
        {
            "role": "assistant",
            "content": "Checking.",
            "reasoning_content": "need weather",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}},
                {"id": "call_2", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Rome"}'}},
            ],
        }
    ]


def test_marks_tool_call_free_assistant_messages_with_stopReason_stop() -> None:
    """toPiContext / marks tool-call-free assistant messages with stopReason stop

    Chat completions carry no stop reason in history; the equivalent mark of a
    tool-call-free turn is the absence of ``tool_calls`` and ``reasoning_content``,
    with ``content: None`` when it has no text.
    """
    turns = [assistant(text("plain"), ReasoningBlock("hidden")), assistant()]
    assert to_chat_messages(turns) == [
        {"role": "assistant", "content": "plain"},
        {"role": "assistant", "content": None},
    ]


def test_parses_malformed_tool_call_arguments_to_empty_object() -> None:
    """toPiContext / parses malformed tool-call arguments to {}

    The SDK route needs no parsed view: the replayed call keeps its raw string.
    """
    (message,) = to_chat_messages([assistant(call("c1", "f", "{broken"))])
    assert message["tool_calls"][0]["function"]["arguments"] == "{broken"  # type: ignore[typeddict-item]
    assert message["content"] == ""


@pytest.mark.parametrize("arguments", ["[1,2]", "42", '"text"', "null", ""])
def test_parses_non_object_argument_JSON_arrays_scalars_to_empty_object(arguments: str) -> None:
    """toPiContext / parses non-object argument JSON (arrays, scalars) to {}

    Equivalent: non-object argument JSON is replayed verbatim, never rewritten.
    """
    (message,) = to_chat_messages([assistant(call("c1", "f", arguments))])
    assert message["tool_calls"][0]["function"]["arguments"] == arguments  # type: ignore[typeddict-item]


def test_recovers_toolName_for_tool_results_from_the_preceding_assistant_call() -> None:
    """toPiContext / recovers toolName for tool results from the preceding assistant call

    Chat completions link a tool result to its call by ``tool_call_id`` alone.
    """
    history: list[Message] = [
        assistant(call("call_9", "weather", "{}")),
        user(result("call_9", text("sunny"))),
    ]
    assert to_chat_messages(history)[1] == {"role": "tool", "tool_call_id": "call_9", "content": "sunny"}


def test_labels_unmatched_tool_results_with_toolName_unknown_and_keeps_isError() -> None:
    """toPiContext / labels unmatched tool results with toolName unknown and keeps isError

    Equivalent: a result with no matching call is still sent under its own id, and an
    error result is sent like any other (its text says what failed).
    """
    history: list[Message] = [user(result("orphan", text("boom"), is_error=True))]
    assert to_chat_messages(history) == [{"role": "tool", "tool_call_id": "orphan", "content": "boom"}]


def test_splits_mixed_user_text_plus_tool_results_and_folds_history_system_messages() -> None:
    """toPiContext / splits mixed user text + tool results and folds history system messages

    History system messages stay ``system`` messages here (the DeepSeek rule), in order.
    """
    history: list[Message] = [
        Message("system", (text("rule "), text("one"))),
        user(result("a", text("A")), text("and "), result("b"), text("more")),
    ]
    assert to_chat_messages(history) == [
        {"role": "system", "content": "rule one"},
        {"role": "user", "content": "and more"},
        {"role": "tool", "tool_call_id": "a", "content": "A"},
        {"role": "tool", "tool_call_id": "b", "content": EMPTY_TOOL_RESULT},
    ]


def test_skips_image_and_unknown_blocks_in_assistant_content() -> None:
    """toPiContext / skips image and unknown blocks in assistant content"""
    image = ImageBlock(url="data:image/png;base64,AA")
    rogue = msgspec.Raw(b'{"type":"rogue","text":"x"}')
    history: list[Message] = [assistant(image, text("seen"), rogue), user(image, text("look"))]
    assert to_chat_messages(history) == [{"role": "assistant", "content": "seen"}, {"role": "user", "content": "look"}]


# -------------------------------------------------------------- request mapping (§10/§11 rules)
def test_sends_a_sentinel_for_empty_tool_result_content() -> None:
    """an empty tool result is sent as (no output)"""
    history: list[Message] = [user(result("c1"))]
    assert to_chat_messages(history) == [{"role": "tool", "tool_call_id": "c1", "content": "(no output)"}]


def test_emits_an_empty_user_message_rather_than_dropping_block_less_messages() -> None:
    """a user message without blocks is still sent, as empty text"""
    assert to_chat_messages([user()]) == [{"role": "user", "content": ""}]


def test_replays_reasoning_only_on_tool_call_turns_and_only_when_non_empty() -> None:
    """reasoning is passed back on tool-call turns only, and never as an empty string"""
    turns = [assistant(ReasoningBlock(""), call("c", "f", "{}")), assistant(text("x"))]
    assert to_chat_messages(turns) == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "assistant", "content": "x"},
    ]


def test_maps_tools_with_strict_passthrough() -> None:
    """per-tool strict is kept exactly (true, false) and left out when absent"""
    strict = msgspec.structs.replace(WEATHER, strict=True)
    loose = msgspec.structs.replace(WEATHER, strict=False)
    assert to_chat_tool(strict)["function"]["strict"] is True
    assert to_chat_tool(loose)["function"]["strict"] is False
    assert "strict" not in to_chat_tool(WEATHER)["function"]


def test_maps_sampling_params_and_stop_sequences() -> None:
    """temperature, max_tokens and stop are carried over (stop copied)"""
    stop = ["END", "\n\n"]
    request = build_request(options(temperature=0.0, max_tokens=64, stop=stop))
    assert (request.temperature, request.max_tokens, request.stop) == (0.0, 64, ["END", "\n\n"])
    assert request.stop is not stop


@pytest.mark.parametrize(
    ("reasoning", "fields"),
    [
        (None, {"thinking": {"type": "enabled"}}),
        ("off", {"thinking": {"type": "disabled"}}),
        ("high", {"thinking": {"type": "enabled"}, "reasoning_effort": "high"}),
        ("xhigh", {"thinking": {"type": "enabled"}, "reasoning_effort": "max"}),
    ],
)
def test_maps_the_reasoning_setting_to_thinking_fields(reasoning: str | None, fields: dict[str, object]) -> None:
    """reasoning omitted/off/high/xhigh select thinking and effort through extra_body"""
    assert reasoning_fields(reasoning) == fields  # type: ignore[arg-type]
    assert build_request(options(), reasoning).extra_body == fields  # type: ignore[arg-type]


@pytest.mark.parametrize("prefill", [[], [text("Sure")]])
def test_rejects_prefill_with_an_UNSUPPORTED_LlmError(prefill: list[ContentBlock]) -> None:
    """a prefill option (even empty) is refused before anything is sent"""
    with pytest.raises(LlmError) as caught:
        build_request(GenerateOptions(model="m", messages=[], prefill=prefill))
    assert caught.value.code == "UNSUPPORTED"
    assert str(caught.value) == "prefill is not supported by the llm-openai adapter"
