"""``encode_request``: the request body, byte for byte the JSON the dict-based mapping wrote.

The reference below is the mapping as it was written over plain JSON values (SPEC §10),
applied to the JSON form of the typed options and encoded with
``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``. The typed encoder must
produce exactly those bytes, for any history.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.adapters.deepseek import RequestDefaults, encode_request
from dsh.core.errors import LlmError
from dsh.core.llm import (
    ContentBlock,
    GenerateOptions,
    ImageBlock,
    Message,
    ReasoningBlock,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    text,
    to_json,
)
from tests.adapters.deepseek.helpers import WIRE_KEY_ORDER, user


# ------------------------------------------------------------------------------ reference
def _joined(blocks: list[dict[str, Any]], kind: str) -> str:
    return "".join(block["text"] for block in blocks if block.get("type") == kind)


def _reference_message(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    if message["role"] == "system":
        return [{"role": "system", "content": _joined(content, "text")}]
    if message["role"] == "assistant":
        text_ = _joined(content, "text")
        calls = [
            {"id": b["id"], "type": "function", "function": {"name": b["name"], "arguments": b["arguments"]}}
            for b in content
            if b.get("type") == "tool-call"
        ]
        wire: dict[str, Any] = {"role": "assistant", "content": text_ if text_ or calls else None}
        if calls:
            if _joined(content, "reasoning"):
                wire["reasoning_content"] = _joined(content, "reasoning")
            wire["tool_calls"] = calls
        return [wire]
    text_ = _joined(content, "text")
    results = [b for b in content if b.get("type") == "tool-result"]
    out: list[dict[str, Any]] = [{"role": "user", "content": text_}] if text_ or not results else []
    for result in results:
        output = _joined(result["content"], "text") or "(no output)"
        out.append({"role": "tool", "tool_call_id": result["toolCallId"], "content": output})
    return out


def reference(options: GenerateOptions, defaults: RequestDefaults | None = None) -> bytes:
    """The body the dict-based mapping wrote for ``options``: what the typed encoder must equal."""
    settings_ = defaults or RequestDefaults()
    messages: list[dict[str, Any]] = (
        [{"role": "system", "content": options.system}] if options.system is not None else []
    )
    for message in to_json(options.messages):
        messages += _reference_message(message)
    body: dict[str, Any] = {
        "model": options.model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if settings_.thinking is not None:
        body["thinking"] = {"type": settings_.thinking}
    if settings_.reasoning_effort is not None:
        body["reasoning_effort"] = settings_.reasoning_effort
    if options.tools:
        body["tools"] = [{"type": "function", "function": to_json(schema)} for schema in options.tools]
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if options.max_tokens is not None:
        body["max_tokens"] = options.max_tokens
    if options.stop is not None:
        body["stop"] = options.stop
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


# ------------------------------------------------------------------------------ strategies
PLAIN = st.text(alphabet=st.characters(codec="utf-8"), max_size=8)  # every code point but the surrogates
TEXTS = st.one_of(PLAIN, st.sampled_from(["", "héllo", "🌍 non-BMP 𝄞", "日本語", 'q"uo\\te\n', "\u2028\x00\x7f"]))
FLOATS = st.floats(allow_nan=False, allow_infinity=False).filter(lambda value: "e" not in repr(value))
"""Floats ``json.dumps`` writes without an exponent (see the spelling test below for the others)."""

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | FLOATS | PLAIN,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(PLAIN, inner, max_size=3),
    max_leaves=8,
)

TEXT_BLOCKS = st.builds(TextBlock, TEXTS, st.sampled_from([msgspec.UNSET, "ephemeral"]))
IMAGES = st.builds(ImageBlock, PLAIN, st.sampled_from([msgspec.UNSET, "image/png"]))
UNKNOWN = st.builds(lambda extra: msgspec.Raw(msgspec.json.encode({"type": "rogue", "x": extra})), JSON_VALUES)
BLOCKS: st.SearchStrategy[ContentBlock] = st.one_of(
    TEXT_BLOCKS,
    TEXT_BLOCKS,
    IMAGES,
    UNKNOWN,
    st.builds(ReasoningBlock, TEXTS),
    st.builds(ToolCallBlock, TEXTS, TEXTS, TEXTS),
    st.builds(
        ToolResultBlock,
        TEXTS,
        st.lists(st.one_of(TEXT_BLOCKS, IMAGES, UNKNOWN), max_size=3).map(tuple),
        st.sampled_from([msgspec.UNSET, True, False]),
    ),
)
MESSAGES: st.SearchStrategy[Message] = st.builds(
    Message, st.sampled_from(["system", "user", "assistant"]), st.lists(BLOCKS, max_size=4).map(tuple)
)
TOOLS = st.none() | st.lists(
    st.builds(
        ToolSchema,
        PLAIN,
        TEXTS,
        st.dictionaries(PLAIN, JSON_VALUES, max_size=3),
        st.sampled_from([msgspec.UNSET, True, False]),
    ),
    max_size=3,
)
DEFAULTS = st.none() | st.builds(
    RequestDefaults,
    st.sampled_from([None, "enabled", "disabled"]),
    st.sampled_from([None, "high", "max"]),
)
OPTIONS = st.builds(
    GenerateOptions,
    model=st.one_of(st.just("deepseek-v4-flash"), PLAIN, st.just('x","messages":[],"y')),
    messages=st.lists(MESSAGES, max_size=8),
    system=st.none() | TEXTS,
    tools=TOOLS,
    temperature=st.none() | FLOATS,
    max_tokens=st.none() | st.integers(min_value=0),
    stop=st.none() | st.lists(PLAIN, max_size=2),
)


# ----------------------------------------------------------------------------- properties
@settings(max_examples=300, deadline=None)
@given(options=OPTIONS, defaults=DEFAULTS)
def test_the_body_is_byte_for_byte_the_reference(options: GenerateOptions, defaults: RequestDefaults | None) -> None:
    """for arbitrary typed histories, tools and settings the bytes equal the dict-based mapping's"""
    assert encode_request(options, defaults) == reference(options, defaults)


def tool_turn(n: int) -> list[Message]:
    """One tool step of a turn: the assistant's call and its result."""
    return [
        Message("assistant", (ReasoningBlock("again"), ToolCallBlock(f"call-{n}", "noop", "{}"))),
        Message("user", (ToolResultBlock(f"call-{n}", (text("ok"),)),)),
    ]


def test_a_long_tool_turn_encodes_as_the_reference() -> None:
    """a 50-message tool turn (the case the deleted cache served) gives the reference bytes"""
    history: list[Message] = [user("run the tool 24 times")]
    while len(history) < 49:
        history += tool_turn(len(history))
    history.append(Message("assistant", (text("done"),)))
    options = GenerateOptions(model="deepseek-v4-flash", messages=history, system="be brief")
    body = encode_request(options, RequestDefaults(thinking="enabled"))
    assert body == reference(options, RequestDefaults(thinking="enabled"))
    assert len(json.loads(body)["messages"]) == 51


# ----------------------------------------------------------------------- body and errors
def test_the_rest_of_the_body_keeps_its_key_order() -> None:
    """model, messages, stream, stream_options, thinking, reasoning_effort, tools, temperature, max_tokens, stop"""
    options = GenerateOptions(
        model="deepseek-v4-flash",
        messages=[user("hi")],
        system="s",
        tools=[ToolSchema("t", "d", {"type": "object", "properties": {}})],
        temperature=0.5,
        max_tokens=9,
        stop=["END"],
    )
    defaults = RequestDefaults(thinking="disabled", reasoning_effort="high")
    body = encode_request(options, defaults)
    assert body == reference(options, defaults)
    assert list(json.loads(body)) == WIRE_KEY_ORDER


def test_an_empty_history_without_system_prompt() -> None:
    """no messages at all encode as an empty messages array"""
    body = encode_request(GenerateOptions(model="m", messages=[]))
    assert body == b'{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":true}}'


@pytest.mark.parametrize("prefill", [[], [text("Sure,")]])
def test_prefill_raises_the_unsupported_error(prefill: list[ContentBlock]) -> None:
    """prefill → LlmError UNSUPPORTED"""
    with pytest.raises(LlmError) as caught:
        encode_request(GenerateOptions(model="m", messages=[user("hi")], prefill=prefill))
    assert caught.value.code == "UNSUPPORTED"


def test_a_lone_surrogate_cannot_be_sent() -> None:
    """a string with a lone surrogate has no UTF-8 form: UnicodeEncodeError, as before"""
    with pytest.raises(UnicodeEncodeError):
        encode_request(GenerateOptions(model="m", messages=[user("x\udc80y")]))


@pytest.mark.parametrize(("value", "sent"), [(1e-05, b"0.00001"), (1e16, b"1e16"), (3e-07, b"3e-7")])
def test_a_float_in_exponent_form_is_spelled_the_shortest_way(value: float, sent: bytes) -> None:
    """the one spelling that differs from json.dumps: the same number, written the shortest way"""
    body = encode_request(GenerateOptions(model="m", messages=[], temperature=value))
    assert body.endswith(b',"temperature":' + sent + b"}")
    assert json.loads(body)["temperature"] == value
