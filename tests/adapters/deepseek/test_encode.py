"""``RequestEncoder``: the request body byte for byte as the uncached definition, with a bounded message cache."""

from __future__ import annotations

import copy
import json
import marshal
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.adapters.deepseek.encode import DEFAULT_CACHE_BYTES, PREFIXES, RequestEncoder, encode_request
from dsh.adapters.deepseek.serialize import RequestDefaults, serialize_request
from dsh.core.errors import LlmError
from dsh.core.llm import (
    ContentBlock,
    GenerateOptions,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolSchema,
    text,
)
from tests.adapters.deepseek.helpers import WIRE_KEY_ORDER, user


def reference(options: GenerateOptions, defaults: RequestDefaults | None = None) -> bytes:
    """Today's request body, spelled out: what every encoding must equal byte for byte."""
    return json.dumps(serialize_request(options, defaults), ensure_ascii=False, separators=(",", ":")).encode()


def outcome(produce: Callable[[], bytes]) -> tuple[Any, ...]:
    """The bytes ``produce`` returns, or what identifies the error it raises (type, args, text, code)."""
    try:
        return ("bytes", produce())
    except Exception as error:
        return ("error", type(error), error.args, str(error), getattr(error, "code", None))


def assert_same(encoder: RequestEncoder, options: GenerateOptions, defaults: RequestDefaults | None = None) -> bytes:
    """Encode through ``encoder`` and check the outcome equals the reference's; returns the bytes."""
    got = outcome(lambda: encoder.encode(options, defaults))
    assert got == outcome(lambda: reference(options, defaults))
    assert got[0] == "bytes", got
    body: bytes = got[1]
    return body


def call(call_id: object, name: object = "f", arguments: object = "{}") -> ContentBlock:
    return {"type": "tool-call", "id": call_id, "name": name, "arguments": arguments}  # type: ignore[typeddict-item]


def result(call_id: str, *texts: str, is_error: bool | None = None) -> ToolResultBlock:
    block: ToolResultBlock = {"type": "tool-result", "toolCallId": call_id, "content": [text(t) for t in texts]}
    if is_error is not None:
        block["isError"] = is_error
    return block


def assistant(*blocks: ContentBlock) -> Message:
    return {"role": "assistant", "content": list(blocks)}


def tool_turn(n: int) -> list[Message]:
    """One tool step of a turn: the assistant's call and its result."""
    return [
        assistant({"type": "reasoning", "text": "again"}, call(f"call-{n}", "noop", "{}")),
        {"role": "user", "content": [result(f"call-{n}", "ok")]},
    ]


def options(messages: list[Message], **fields: Any) -> GenerateOptions:
    return GenerateOptions(model="deepseek-v4-flash", messages=messages, **fields)


# ------------------------------------------------------------------------------ strategies
PLAIN = st.text(alphabet=st.characters(codec="utf-8"), max_size=8)  # every code point but the surrogates
TEXTS = st.one_of(PLAIN, st.sampled_from(["", "héllo", "🌍 non-BMP 𝄞", "日本語", 'q"uo\\te\n', "\u2028\x00"]))
LONE_SURROGATES = st.sampled_from(["\ud800", "a\udfffb", "\udbff", "🌍\ud83d"])
ODD_SCALARS = st.sampled_from([True, False, 1, 0, 1.0, 0.0, -0.0, None, 2**70])
VERBATIM = st.one_of(TEXTS, TEXTS, TEXTS, ODD_SCALARS)
"""Values the serializer copies to the wire as they are (tool-call id/name/arguments, toolCallId)."""

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | PLAIN,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(PLAIN, inner, max_size=3),
    max_leaves=8,
)


def _text_block(value: str, cached: bool) -> TextBlock:
    block: TextBlock = {"type": "text", "text": value}
    if cached:
        block["cache"] = "ephemeral"
    return block


def _image(url: str, mime: str | None) -> ImageBlock:
    block: ImageBlock = {"type": "image", "url": url}
    if mime is not None:
        block["mimeType"] = mime
    return block


TEXT_BLOCKS = st.builds(_text_block, TEXTS, st.booleans())
IMAGES = st.builds(_image, PLAIN, st.none() | st.just("image/png"))


def _tool_result(call_id: object, content: list[ContentBlock], is_error: bool | None) -> ContentBlock:
    block = {"type": "tool-result", "toolCallId": call_id, "content": content}
    if is_error is not None:
        block["isError"] = is_error
    return block  # type: ignore[return-value]


BLOCKS: st.SearchStrategy[ContentBlock] = st.one_of(
    TEXT_BLOCKS,
    TEXT_BLOCKS,
    IMAGES,
    st.builds(lambda value: {"type": "reasoning", "text": value}, TEXTS),
    st.builds(call, VERBATIM, VERBATIM, VERBATIM),
    st.builds(_tool_result, VERBATIM, st.lists(st.one_of(TEXT_BLOCKS, IMAGES), max_size=3), st.none() | st.booleans()),
    st.builds(lambda extra: {"type": "rogue", "x": extra}, JSON_VALUES),
)


def _tagged(tag: str, kind: str, blocks: list[ContentBlock]) -> Message:
    """A user message shaped like a derived ``context/message`` or ``steering/message``."""
    return {"role": "user", "content": [text(f'<{tag} source="{kind}">'), *blocks, text(f"</{tag}>")]}


MESSAGES: st.SearchStrategy[Message] = st.one_of(
    st.builds(
        lambda role, blocks: {"role": role, "content": blocks},
        st.sampled_from(["system", "user", "assistant"]),
        st.lists(BLOCKS, max_size=4),
    ),
    st.builds(
        _tagged,
        st.sampled_from(["context", "steering"]),
        st.sampled_from(["plugin", "agent", "user"]),
        st.lists(TEXT_BLOCKS, max_size=2),
    ),
)
BAD_MESSAGES: st.SearchStrategy[Any] = st.one_of(
    st.builds(lambda s: {"role": "user", "content": [text(s)]}, LONE_SURROGATES),
    st.just({"role": "user", "content": [{"type": "text", "text": 1}]}),
    st.just({"role": "assistant", "content": [{"type": "tool-call", "id": "x"}]}),
    st.just({"content": []}),
    st.just({"role": "user", "content": [{"type": "tool-result", "toolCallId": {1, 2}, "content": []}]}),
)


def _schema(name: str, description: str, parameters: dict[str, Any], strict: bool | None) -> ToolSchema:
    schema: ToolSchema = {"name": name, "description": description, "parameters": parameters}
    if strict is not None:
        schema["strict"] = strict
    return schema


TOOLS = st.none() | st.lists(
    st.builds(_schema, PLAIN, TEXTS, st.dictionaries(PLAIN, JSON_VALUES, max_size=3), st.none() | st.booleans()),
    max_size=3,
)
MODELS = st.one_of(
    st.just("deepseek-v4-flash"), PLAIN, st.sampled_from(['x","messages":[],"y', 7, 1.5, {"messages": []}])
)
DEFAULTS = st.none() | st.builds(
    RequestDefaults,
    st.sampled_from([None, "enabled", "disabled"]),
    st.sampled_from([None, "high", "max"]),
)
FIELDS = st.fixed_dictionaries(
    {
        "model": MODELS,
        "system": st.none() | TEXTS,
        "tools": TOOLS,
        "temperature": st.none() | st.floats(allow_nan=False),
        "max_tokens": st.none() | st.integers(min_value=0),
        "stop": st.none() | st.lists(PLAIN, max_size=2),
        "prefill": st.sampled_from([None, None, None, None, None, None, None, []]),
    }
)


def _apply(history: list[Message], op: str, data: st.DataObject) -> list[Message]:
    """One change to the history between two calls, as a caller (or an agent/request listener) may make."""
    if op == "append":
        history.append(data.draw(MESSAGES))
    elif op == "break":
        history.append(data.draw(BAD_MESSAGES))
    elif history and op in ("edit", "mutate", "drop"):
        index = data.draw(st.integers(min_value=0, max_value=len(history) - 1))
        if op == "edit":
            history[index] = data.draw(MESSAGES)
        elif op == "mutate":  # in place, on an object an earlier call was given
            content = history[index].get("content")
            if isinstance(content, list):
                content.append(data.draw(BLOCKS))
        else:
            del history[index]
    elif op == "reorder":
        history = list(data.draw(st.permutations(history)))
    elif op == "copy":  # a fresh deep copy, as Session.derive_messages hands out
        history = copy.deepcopy(history)
    return history


OPS = st.sampled_from(
    ["same", "copy", "copy", "append", "append", "append", "edit", "mutate", "drop", "reorder", "break"]
)


# ----------------------------------------------------------------------------- properties
@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    max_bytes=st.sampled_from([0, 40, 300, 2_000, DEFAULT_CACHE_BYTES]),
    prefixes=st.sampled_from([0, 1, PREFIXES]),
)
def test_one_encoder_matches_the_reference_over_repeated_edited_and_reordered_calls(
    data: st.DataObject, max_bytes: int, prefixes: int
) -> None:
    """for arbitrary histories and call sequences through one encoder, the bytes (or the error) equal the reference"""
    encoder = RequestEncoder(max_bytes, prefixes)
    history: list[Message] = data.draw(st.lists(MESSAGES, max_size=6))
    for _ in range(data.draw(st.integers(min_value=1, max_value=8))):
        history = _apply(history, data.draw(OPS), data)
        fields: dict[str, Any] = data.draw(FIELDS)
        opts = GenerateOptions(messages=history, **fields)
        defaults = data.draw(DEFAULTS)
        before = copy.deepcopy(history)
        assert outcome(partial(encoder.encode, opts, defaults)) == outcome(partial(reference, opts, defaults))
        assert history == before  # the encoder never changes the caller's messages
        assert encoder.cached_bytes <= max_bytes
        if max_bytes == 0:
            assert len(encoder) == 0


@settings(max_examples=100, deadline=None)
@given(history=st.lists(MESSAGES, max_size=8))
def test_a_repeated_history_is_answered_from_the_cache(history: list[Message]) -> None:
    """a second call with a fresh copy of the same history encodes nothing again"""
    encoder = RequestEncoder()
    first = outcome(lambda: encoder.encode(options(history)))
    misses = encoder.misses
    second = outcome(lambda: encoder.encode(options(copy.deepcopy(history))))
    assert first == second == outcome(lambda: reference(options(history)))
    if first[0] == "bytes":
        assert encoder.misses == misses
        assert encoder.hits == 2 * len(history) - misses  # duplicates hit already in the first call


# ---------------------------------------------------------------------------------- cache
def test_a_growing_turn_encodes_each_message_once() -> None:
    """201 calls over a history growing by one message per call encode each message once"""
    encoder = RequestEncoder()
    history: list[Message] = [user("run the tool 200 times")]
    while len(history) < 201:
        history += tool_turn(len(history))
    for size in range(1, 202):
        assert_same(encoder, options(copy.deepcopy(history[:size]), system="be brief"))
    assert encoder.misses == 201
    assert encoder.hits == sum(range(201))
    assert len(encoder) == 201


def test_interleaved_sessions_share_one_encoder() -> None:
    """two conversations alternating through one encoder keep hitting the cache"""
    encoder = RequestEncoder()
    first = [user("one"), *tool_turn(1)]
    second = [user("two"), *tool_turn(1)]
    for _ in range(3):
        assert_same(encoder, options(copy.deepcopy(first)))
        assert_same(encoder, options(copy.deepcopy(second)))
    assert encoder.misses == 4  # the tool turn both share is encoded once
    assert encoder.hits == 6 * 3 - 4


def test_an_edited_message_is_encoded_again() -> None:
    """an edited message (same position, changed text) is re-encoded, never served stale"""
    encoder = RequestEncoder()
    history = [user("question"), assistant(text("first answer"))]
    before = assert_same(encoder, options(history))
    history[1]["content"][0]["text"] = "second answer"  # type: ignore[typeddict-unknown-key]
    after = assert_same(encoder, options(history))
    assert b"second answer" in after
    assert b"first answer" not in after
    assert before != after
    assert (encoder.hits, encoder.misses) == (1, 3)


def test_bool_int_and_float_content_never_collide() -> None:
    """True, 1 and 1.0 (and False, 0, -0.0) in the same place are distinct cache entries"""
    encoder = RequestEncoder()
    bodies = []
    for value in (1, True, 1.0, 0, False, 0.0, -0.0, "1"):
        answered: Any = {"role": "user", "content": [{"type": "tool-result", "toolCallId": value, "content": []}]}
        history = [assistant(call(value, value, value)), answered]
        bodies.append(assert_same(encoder, options(history)))
    assert len(set(bodies)) == len(bodies)
    assert encoder.hits == 0


def test_equal_values_with_different_keys_only_cost_a_miss() -> None:
    """a tuple where a list was, or another dict key order, misses but encodes the same bytes"""
    encoder = RequestEncoder()
    listed: Message = {"role": "user", "content": [text("a"), text("b")]}
    tupled = {"role": "user", "content": (text("a"), text("b"))}
    reordered = {"content": [{"text": "a", "type": "text"}, text("b")], "role": "user"}
    bodies = {assert_same(encoder, options([message])) for message in (listed, tupled, reordered)}  # type: ignore[list-item]
    assert len(bodies) == 1
    assert (encoder.hits, encoder.misses) == (0, 3)


def test_a_message_marshal_refuses_is_encoded_without_the_cache() -> None:
    """a str subclass or nesting deeper than marshal allows is encoded directly and never cached"""

    class Label(str):
        pass

    nested: Any = "deep"
    for _ in range(2_100):
        nested = [nested]
    encoder = RequestEncoder()
    odd: Message = {"role": "user", "content": [text(Label("subclassed"))]}
    deep: Message = {"role": "user", "content": [text("x"), {"type": "rogue", "x": nested}]}  # type: ignore[list-item]
    for message in (odd, deep):
        with pytest.raises(ValueError):
            marshal.dumps(message, 2)  # type: ignore[arg-type]
        assert_same(encoder, options([message, user("plain")]))
        assert_same(encoder, options([message, user("plain")]))
    assert len(encoder) == 1
    assert (encoder.hits, encoder.misses) == (3, 1)


def test_object_sharing_never_changes_the_key() -> None:
    """one string object used twice and two equal string objects make the same key, so a copy hits"""
    word = "".join(["sha", "red"])
    twin = "".join(["sh", "ared"])
    assert word == twin
    assert word is not twin
    shared: Message = {"role": "user", "content": [text(word), text(word)]}
    separate: Message = {"role": "user", "content": [text(word), text(twin)]}
    encoder = RequestEncoder()
    assert assert_same(encoder, options([shared])) == assert_same(encoder, options([separate]))
    assert (encoder.hits, encoder.misses) == (1, 1)


def test_eviction_under_a_tiny_bound_is_least_recently_used() -> None:
    """a bound that holds two messages evicts the least recently used one"""
    a, b, c = user("alpha"), user("bravo"), user("charl")
    probe = RequestEncoder()
    probe.encode(options([a]))
    entry = probe.cached_bytes  # the three messages have the same size
    encoder = RequestEncoder(2 * entry, prefixes=0)  # the message cache alone
    for message in (a, b, a, c):  # a is used again after b: b is the oldest when c arrives
        assert_same(encoder, options([message]))
        assert encoder.cached_bytes <= 2 * entry
    assert (len(encoder), encoder.cached_bytes) == (2, 2 * entry)
    assert (encoder.hits, encoder.misses) == (1, 3)
    assert_same(encoder, options([a]))
    assert_same(encoder, options([c]))
    assert (encoder.hits, encoder.misses) == (3, 3)
    assert_same(encoder, options([b]))
    assert encoder.misses == 4


def test_a_message_larger_than_the_bound_is_not_cached() -> None:
    """a fragment that cannot fit the bound on its own is encoded every time, and evicts nothing"""
    encoder = RequestEncoder(200)
    small, large = user("s"), user("x" * 500)
    assert_same(encoder, options([small]))
    held = encoder.cached_bytes
    for _ in range(2):
        assert_same(encoder, options([large, small]))
    assert (len(encoder), encoder.cached_bytes) == (1, held)
    assert (encoder.hits, encoder.misses) == (2, 3)


def test_a_zero_bound_disables_the_cache() -> None:
    """max_bytes=0 caches nothing and still encodes exactly"""
    encoder = RequestEncoder(0)
    history = [user("hi"), *tool_turn(1)]
    for _ in range(2):
        assert_same(encoder, options(copy.deepcopy(history), system="sys"))
    assert (len(encoder), encoder.cached_bytes, encoder.hits, encoder.misses) == (0, 0, 0, 6)


def test_a_negative_bound_is_refused() -> None:
    """a negative max_bytes is a configuration error naming the fix"""
    with pytest.raises(ValueError, match=r"max_bytes is -1: give 0 \(no cache\) or a positive byte count"):
        RequestEncoder(-1)


def test_clear_forgets_every_encoding() -> None:
    """clear() empties the cache; the next call encodes everything again, as exactly"""
    encoder = RequestEncoder()
    history = [user("hi"), *tool_turn(1)]
    assert_same(encoder, options(history, system="sys"))
    encoder.clear()
    assert (len(encoder), encoder.cached_bytes) == (0, 0)
    assert_same(encoder, options(history, system="sys"))
    assert (encoder.hits, encoder.misses) == (0, 6)


def test_the_system_prompt_is_reused_only_while_it_is_the_same_exact_string() -> None:
    """a repeated, changed, subclassed or oversized system prompt always encodes as the reference"""

    class Prompt(str):
        pass

    class Agreeable(str):
        """Claims to equal anything: only an exact ``str`` may reuse the last prompt's encoding."""

        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = str.__hash__

    encoder = RequestEncoder(100)
    prompts = ("be brief", "be brief", Agreeable("other"), "be verbose", Prompt("be verbose"), "y" * 200, "y" * 200, "")
    for system in (*prompts, None):
        body = assert_same(encoder, options([user("hi")], system=system))
        if system is not None:
            assert json.loads(body)["messages"][0]["content"] == str.__str__(system)


def test_the_default_bound_is_16_mib() -> None:
    """the default cache bound is 16 MiB"""
    assert RequestEncoder().max_bytes == DEFAULT_CACHE_BYTES == 16 * 1024 * 1024


# ----------------------------------------------------------------------- body and errors
def test_encode_request_is_the_reference_expression() -> None:
    """encode_request builds the body from scratch as json.dumps(serialize_request(...)) does"""
    opts = options([user("héllo 🌍"), *tool_turn(1)], system="s", tools=[_schema("t", "d", {"type": "object"}, True)])
    defaults = RequestDefaults(thinking="enabled", reasoning_effort="max")
    assert encode_request(opts, defaults) == reference(opts, defaults)
    assert encode_request(opts) == reference(opts)


def test_the_rest_of_the_body_keeps_its_key_order() -> None:
    """model, messages, stream, stream_options, thinking, reasoning_effort, tools, temperature, max_tokens, stop"""
    opts = options(
        [user("hi")],
        system="s",
        tools=[_schema("t", "d", {"type": "object", "properties": {}}, None)],
        temperature=0.5,
        max_tokens=9,
        stop=["END"],
    )
    body = assert_same(RequestEncoder(), opts, RequestDefaults(thinking="disabled", reasoning_effort="high"))
    assert list(json.loads(body)) == WIRE_KEY_ORDER


@pytest.mark.parametrize("model", ["m", 'x","messages":[],"y', 7, 1.5, None, {"messages": [], "x": 1}])
def test_odd_model_values_encode_as_the_reference(model: Any) -> None:
    """the model value, whatever it is, is encoded as the reference encodes it"""
    encoder = RequestEncoder()
    opts = options([user("hi")])
    opts.model = model
    assert_same(encoder, opts)
    assert_same(encoder, opts)


def test_an_empty_history_without_system_prompt() -> None:
    """no messages at all encode as an empty messages array"""
    body = assert_same(RequestEncoder(), options([]))
    assert b'"messages":[]' in body


@pytest.mark.parametrize("prefill", [[], [text("Sure,")]])
def test_prefill_raises_the_same_unsupported_error(prefill: list[ContentBlock]) -> None:
    """prefill → LlmError UNSUPPORTED with the reference's message and code"""
    encoder = RequestEncoder()
    opts = options([user("hi")], prefill=prefill)
    with pytest.raises(LlmError) as caught:
        encoder.encode(opts)
    assert caught.value.code == "UNSUPPORTED"
    assert outcome(lambda: encoder.encode(opts)) == outcome(lambda: reference(opts))
    assert len(encoder) == 0


@pytest.mark.parametrize(
    ("bad", "error"),
    [
        (user("lone \ud800 surrogate"), UnicodeEncodeError),
        ({"role": "user", "content": [{"type": "text", "text": 1}]}, TypeError),
        ({"role": "assistant", "content": [{"type": "tool-call", "id": "x"}]}, KeyError),
        ({"role": "user", "content": [{"type": "tool-result", "toolCallId": {1}, "content": []}]}, TypeError),
        ({"content": []}, KeyError),
        (None, TypeError),
    ],
)
def test_bad_messages_raise_what_the_reference_raises(bad: Any, error: type[Exception]) -> None:
    """a bad message anywhere in the history raises the reference's error; the good ones stay cached and exact"""
    encoder = RequestEncoder()
    good = [user("before"), *tool_turn(1)]
    opts = options([*good, bad, user("after")], system="s")
    with pytest.raises(error):
        encoder.encode(opts)
    assert outcome(lambda: encoder.encode(opts)) == outcome(lambda: reference(opts))
    assert_same(encoder, options(copy.deepcopy(good), system="s"))
    assert encoder.hits >= len(good)


def test_bad_tools_raise_what_the_reference_raises() -> None:
    """a tool schema JSON cannot hold (or one missing a field) raises the reference's error"""
    encoder = RequestEncoder()
    unencodable = options([user("hi")], tools=[_schema("t", "d", {"enum": {1, 2}}, None)])
    incomplete = options([user("hi")], tools=[{"name": "t"}])
    with pytest.raises(TypeError, match="set is not JSON serializable"):
        encoder.encode(unencodable)
    with pytest.raises(KeyError):
        encoder.encode(incomplete)
    for opts in (unencodable, incomplete):
        assert outcome(partial(encoder.encode, opts)) == outcome(partial(reference, opts))


def test_a_lone_surrogate_error_names_the_same_position_as_the_reference() -> None:
    """the UnicodeEncodeError carries the whole body and the same offsets as the reference's"""
    encoder = RequestEncoder()
    history = [user("fine"), *tool_turn(1)]
    assert_same(encoder, options(copy.deepcopy(history)))
    opts = options([*history, user("x\udc80y")], system="🌍")
    with pytest.raises(UnicodeEncodeError) as caught:
        encoder.encode(opts)
    with pytest.raises(UnicodeEncodeError) as expected:
        reference(opts)
    assert caught.value.args == expected.value.args


# ------------------------------------------------------------------------------- prefixes
def test_a_growing_history_reuses_its_prefix_and_looks_up_only_the_new_messages() -> None:
    """(extra) each call extends the last one: the kept prefix covers it, only the new message is looked up"""
    encoder = RequestEncoder()
    history: list[Message] = [user("q0")]
    assert_same(encoder, options(copy.deepcopy(history)))
    for step in range(1, 30):
        history.append(user(f"q{step}"))
        assert_same(encoder, options(copy.deepcopy(history)))
    assert (encoder.hits, encoder.misses) == (sum(range(30)), 30)
    encoder.clear()  # prefixes go too: everything is a miss again
    assert_same(encoder, options(copy.deepcopy(history)))
    assert encoder.misses == 60


def test_a_changed_early_message_never_reuses_a_prefix() -> None:
    """(extra) an edit anywhere before the end breaks the byte prefix: the edited message is encoded anew"""
    encoder = RequestEncoder(prefixes=1)
    history: list[Message] = [user("alpha"), user("bravo"), user("charlie")]
    assert_same(encoder, options(copy.deepcopy(history)))
    edited = copy.deepcopy(history)
    edited[1] = user("BRAVO")
    edited.append(user("delta"))
    assert_same(encoder, options(edited))
    assert (encoder.hits, encoder.misses) == (2, 5)
    truncated = history[:2]  # shorter than the kept prefix: per-message lookups only
    assert_same(encoder, options(truncated))
    assert (encoder.hits, encoder.misses) == (4, 5)


def test_interleaved_conversations_each_keep_a_prefix_up_to_the_limit() -> None:
    """(extra) two histories in flight through one encoder both stay covered; past the limit the oldest goes"""
    encoder = RequestEncoder(prefixes=2)
    first: list[Message] = [user("first conversation")]
    second: list[Message] = [user("second conversation")]
    for step in range(3):
        first.append(user(f"a{step}"))
        second.append(user(f"b{step}"))
        assert_same(encoder, options(copy.deepcopy(first)))
        assert_same(encoder, options(copy.deepcopy(second)))
    assert encoder.misses == 8
    third: list[Message] = [user("third conversation")]
    assert_same(encoder, options(third))  # now first is the oldest of three: dropped
    hits = encoder.hits
    assert_same(encoder, options(copy.deepcopy(second)))
    assert encoder.hits == hits + len(second)


def test_prefixes_that_do_not_fit_the_bound_are_not_kept() -> None:
    """(extra) a history larger than max_bytes keeps no prefix (the bytes stay bounded)"""
    probe = RequestEncoder()
    probe.encode(options([user("y")]))
    encoder = RequestEncoder(max_bytes=probe.cached_bytes)  # room for "y" alone
    history: list[Message] = [user("x" * 100), user("y")]
    for _ in range(2):
        assert_same(encoder, options(copy.deepcopy(history)))
    assert encoder.hits == 1  # only "y" fits the message cache; no prefix covered the history


def test_a_history_marshal_cannot_hold_is_encoded_without_prefixes() -> None:
    """(extra) a message marshal refuses disables the prefix for that call; the bytes still match"""

    class Text(str):
        pass

    encoder = RequestEncoder()
    odd: Message = {"role": "user", "content": [{"type": "text", "text": Text("odd")}]}
    for _ in range(2):
        assert_same(encoder, options([user("plain"), odd]))
    assert (encoder.hits, encoder.misses) == (1, 1)


def test_a_negative_prefix_count_is_refused() -> None:
    """(extra) a negative prefixes count is a configuration error naming the fix"""
    with pytest.raises(ValueError, match=r"prefixes is -1: give 0 \(keep none\) or a positive count"):
        RequestEncoder(prefixes=-1)
