"""Session log lines in and out (SPEC §3.1, §4b): one checked pass, unknown variants kept, the interop acceptance."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.core.errors import HarnessError
from dsh.core.llm import UNSET, Unknown, encode, to_json
from dsh.core.session import (
    CORE_EVENT_TYPES,
    MessageTrigger,
    Session,
    SessionEvent,
    SessionEventBase,
    SessionHeader,
    StepData,
    StepStartEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
    UntypedEvent,
    UserMessageEvent,
    event_class,
    header_line,
    parse_session_event,
    parse_session_event_line,
    parse_session_header,
    parse_session_header_line,
    payload_type,
    register_event_type,
    session_event_line,
)
from tests.core.session.helpers import text

# The reference conformance cases, kept in the repository beside the ACP snapshot tests.
CONFORMANCE = Path(__file__).resolve().parents[2] / "examples" / "acp" / "reference"


def raw(type: str, seq: int, data: Any, time: int = 0) -> dict[str, Any]:
    """A logged event as decoded JSON, ``{type, seq, time, data}``."""
    return {"type": type, "seq": seq, "time": time, "data": data}


def line_of(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


SOURCE = {"kind": "user"}
TOOL_CALL = {"type": "tool-call", "id": "c1", "name": "bash", "arguments": '{"command":"ls"}'}
IMAGE = {"type": "image", "url": "data:x", "mimeType": "image/png", "cache": "ephemeral"}
TOOL_RESULT_BLOCK = {
    "type": "tool-result",
    "toolCallId": "c1",
    "content": [text("out"), IMAGE],
    "isError": False,
}

VALID: list[tuple[str, Any]] = [
    ("turn/start", {"turn": 1, "trigger": {"kind": "message", "source": SOURCE}}),
    ("turn/start", {"turn": 2, "trigger": {"kind": "continuation"}}),
    (
        "turn/start",
        {"turn": 3, "trigger": {"kind": "injection", "source": {"kind": "plugin", "plugin": "p"}}},
    ),
    ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "aborted", "reason": "cancelled"}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "error", "message": "boom", "code": "X"}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "disposed"}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "max-tokens"}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "interrupted"}}),
    ("step/start", {"turn": 1, "step": 1}),
    ("step/end", {"turn": 1, "step": 1}),
    (
        "user/message",
        {"content": [text("hi"), {"type": "text", "text": "c", "cache": "ephemeral"}], "source": SOURCE},
    ),
    ("context/message", {"content": [text("ctx")], "source": {"kind": "agent", "agentId": "a1"}}),
    (
        "assistant/chunk",
        {"turn": 1, "step": 1, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}},
    ),
    ("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "h"}}),
    (
        "assistant/chunk",
        {"turn": 1, "step": 1, "chunk": {"type": "reasoning-delta", "index": 1, "text": "r"}},
    ),
    (
        "assistant/chunk",
        {
            "turn": 1,
            "step": 1,
            "chunk": {
                "type": "tool-call-delta",
                "index": 2,
                "id": "c1",
                "name": "bash",
                "argumentsDelta": "{",
            },
        },
    ),
    (
        "assistant/chunk",
        {
            "turn": 1,
            "step": 1,
            "chunk": {"type": "tool-call-delta", "index": 2, "id": "c1", "argumentsDelta": "}"},
        },
    ),
    (
        "assistant/chunk",
        {"turn": 1, "step": 1, "chunk": {"type": "block-end", "index": 2, "block": TOOL_CALL}},
    ),
    (
        "assistant/chunk",
        {
            "turn": 1,
            "step": 1,
            "chunk": {
                "type": "usage",
                "usage": {
                    "inputTokens": 1,
                    "outputTokens": 2,
                    "cacheReadTokens": 0,
                    "cacheWriteTokens": 3,
                    "reasoningTokens": 4,
                },
            },
        },
    ),
    ("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "finish", "reason": {"kind": "stop"}}}),
    (
        "assistant/chunk",
        {"turn": 1, "step": 1, "chunk": {"type": "finish", "reason": {"kind": "tool-calls"}}},
    ),
    (
        "assistant/chunk",
        {"turn": 1, "step": 1, "chunk": {"type": "finish", "reason": {"kind": "max-tokens"}}},
    ),
    ("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "finish", "reason": {"kind": "aborted"}}}),
    (
        "assistant/chunk",
        {"turn": 1, "step": 1, "chunk": {"type": "finish", "reason": {"kind": "error", "message": "m"}}},
    ),
    (
        "assistant/message",
        {
            "turn": 1,
            "step": 1,
            "content": [{"type": "reasoning", "text": "think"}, text("a"), TOOL_CALL, IMAGE],
        },
    ),
    ("tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "bash", "arguments": "{}"}),
    ("tool/result", {"turn": 1, "step": 1, "callId": "c1", "content": [text("out")], "isError": False}),
    (
        "tool/result",
        {
            "turn": 1,
            "step": 1,
            "callId": "c1",
            "content": [TOOL_RESULT_BLOCK],
            "isError": True,
            "error": {"name": "E", "code": "e"},
        },
    ),
    ("steering/message", {"turn": 1, "content": [text("steer")], "source": SOURCE}),
    ("usage", {"turn": 1, "step": 1, "usage": {"inputTokens": 10, "outputTokens": 5}}),
    ("error", {"turn": 1, "step": 1, "message": "failed"}),
    ("error", {"turn": 1, "step": 1, "message": "failed", "code": "ABORTED"}),
]


@pytest.mark.parametrize(("kind", "data"), VALID, ids=[f"{kind}-{index}" for index, (kind, _) in enumerate(VALID)])
def test_parses_every_known_event_type_into_its_class(kind: str, data: Any) -> None:
    value = raw(kind, 3, data, time=1_700_000_000_000)
    parsed = parse_session_event(value)
    assert type(parsed) is event_class(kind)
    assert parsed.type == kind
    assert to_json(parsed) == value
    line = line_of(value)
    assert session_event_line(parsed) == line
    assert parse_session_event_line(line) == parsed
    assert parse_session_event_line(line.encode()) == parsed


@pytest.mark.parametrize(("kind", "data"), VALID, ids=[f"{kind}-{index}" for index, (kind, _) in enumerate(VALID)])
def test_no_event_or_value_inside_it_is_tracked_by_the_cycle_collector(kind: str, data: Any) -> None:
    import gc

    def structs(value: Any) -> Iterator[msgspec.Struct]:
        if isinstance(value, msgspec.Struct):
            yield value
            for name in value.__struct_fields__:
                yield from structs(getattr(value, name))
        elif isinstance(value, tuple):
            for item in value:
                yield from structs(item)

    parsed = parse_session_event(raw(kind, 3, data, time=1_700_000_000_000))
    found = list(structs(parsed))
    assert len(found) >= 2  # the event and its payload at least
    assert [value for value in found if gc.is_tracked(value)] == []


OPEN: list[tuple[str, Any]] = [
    ("plugin/custom", {"anything": [1, {"goes": None}]}),
    ("plugin/none", None),
    (
        "user/message",
        {"content": [{"type": "audio", "data": "..."}], "source": {"kind": "robot", "serial": 7}},
    ),
    ("turn/start", {"turn": 1, "trigger": {"kind": "timer", "every": 5}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "preempted"}}),
    (
        "assistant/chunk",
        {"turn": 1, "step": 1, "chunk": {"type": "block-end", "index": 0, "block": {"type": "audio"}}},
    ),
    (
        "assistant/chunk",
        {"turn": 1, "step": 1, "chunk": {"type": "finish", "reason": {"kind": "content-filter"}}},
    ),
]


@pytest.mark.parametrize(("kind", "data"), OPEN, ids=[kind for kind, _ in OPEN])
def test_keeps_unknown_types_and_variants_and_writes_them_back_byte_identical(kind: str, data: Any) -> None:
    value = raw(kind, 0, data)
    line = line_of(value)
    parsed = parse_session_event_line(line)
    assert session_event_line(parsed) == line
    assert parse_session_event(value) == parsed
    assert to_json(parsed) == value


def test_an_unknown_event_type_is_an_untyped_event_holding_its_json() -> None:
    line = '{"type":"plugin/custom","seq":4,"time":9,"data":{"anything":[1,{"goes":null}],"é":1.5}}'
    parsed = parse_session_event_line(line)
    assert parsed == UntypedEvent(type="plugin/custom", seq=4, time=9, data={"anything": [1, {"goes": None}], "é": 1.5})
    assert parsed.type == "plugin/custom"
    assert session_event_line(parsed) == line
    with pytest.raises(AttributeError):
        parsed.seq = 5  # type: ignore[misc]


def test_unknown_nested_variants_are_kept_as_unknown() -> None:
    trigger = parse_session_event(raw("turn/start", 0, {"turn": 1, "trigger": {"kind": "timer", "every": 5}}))
    assert type(trigger) is TurnStartEvent
    assert type(trigger.data.trigger) is Unknown
    reason = parse_session_event(raw("turn/end", 0, {"turn": 1, "reason": {"kind": "preempted"}}))
    assert type(reason) is TurnEndEvent
    assert encode(reason.data.reason) == b'{"kind":"preempted"}'
    message = parse_session_event(
        raw(
            "user/message", 0, {"content": [{"type": "audio", "data": "..."}], "source": {"kind": "robot", "serial": 7}}
        )
    )
    assert type(message) is UserMessageEvent
    assert type(message.data.content[0]) is Unknown
    assert encode(message.data.source) == b'{"kind":"robot","serial":7}'
    nested = parse_session_event(
        raw("turn/start", 0, {"turn": 1, "trigger": {"kind": "message", "source": {"kind": "robot"}}})
    )
    assert type(nested) is TurnStartEvent
    assert type(nested.data.trigger) is MessageTrigger
    assert type(nested.data.trigger.source) is Unknown


def test_a_typed_struct_member_is_walked_when_an_unknown_variant_sends_the_event_through_the_fallback() -> None:
    data = {
        "turn": 1,
        "step": 1,
        "callId": "c",
        "content": [{"type": "audio"}],
        "isError": True,
        "error": {"name": "E", "code": "e"},
    }
    parsed = parse_session_event(raw("tool/result", 0, data))
    assert type(parsed) is ToolResultEvent
    assert parsed.data.error.code == "e"  # type: ignore[union-attr]
    with pytest.raises(HarnessError, match=r"missing required field `code` - at `\$.data.error`"):
        parse_session_event(raw("tool/result", 0, {**data, "error": {"name": "E"}}))


def test_unknown_fields_of_a_known_shape_are_ignored() -> None:
    data = {"turn": 1, "step": 1, "callId": "c", "content": [], "isError": False, "extra": "dropped"}
    parsed = parse_session_event(raw("tool/result", 0, data))
    assert "extra" not in session_event_line(parsed)


MALFORMED: list[tuple[str, Any, str]] = [
    ("not a mapping", [1, 2], "Expected `object`, got `array` - at `$`"),
    ("missing data", {"type": "x", "seq": 0, "time": 0}, "Object missing required field `data` - at `$`"),
    (
        "negative seq",
        {"type": "x", "seq": -1, "time": 0, "data": None},
        "Expected `int` >= 0 - at `$.seq`",
    ),
    ("float seq", {"type": "x", "seq": 1.0, "time": 0, "data": None}, "Expected `int`, got `float` - at `$.seq`"),
    ("string seq", {"type": "x", "seq": "1", "time": 0, "data": None}, "seq"),
    ("bool time", {"type": "x", "seq": 0, "time": True, "data": None}, "time"),
    ("int type", {"type": 5, "seq": 0, "time": 0, "data": None}, "Expected `str`, got `int` - at `$.type`"),
    (
        "string turn",
        raw("step/start", 0, {"turn": "1", "step": 1}),
        'malformed "step/start" event: Expected `int`, got `str` - at `$.data.turn`',
    ),
    ("missing trigger source", raw("turn/start", 0, {"turn": 1, "trigger": {"kind": "message"}}), "source"),
    (
        "plugin source without plugin",
        raw("user/message", 0, {"content": [], "source": {"kind": "plugin"}}),
        "plugin",
    ),
    (
        "missing isError",
        raw("tool/result", 0, {"turn": 1, "step": 1, "callId": "c", "content": []}),
        "isError",
    ),
    (
        "null isError",
        raw("tool/result", 0, {"turn": 1, "step": 1, "callId": "c", "content": [], "isError": None}),
        "isError",
    ),
    ("null optional code", raw("error", 0, {"turn": 1, "step": 1, "message": "m", "code": None}), "code"),
    (
        "bad cache value",
        raw(
            "user/message",
            0,
            {"content": [{"type": "text", "text": "t", "cache": "forever"}], "source": SOURCE},
        ),
        "cache",
    ),
    (
        "text block without text",
        raw("user/message", 0, {"content": [{"type": "text"}], "source": SOURCE}),
        "text",
    ),
    ("block without type", raw("user/message", 0, {"content": [{"text": "t"}], "source": SOURCE}), "type"),
    ("content not a list", raw("user/message", 0, {"content": "hi", "source": SOURCE}), "content"),
    (
        "unknown chunk type (closed union)",
        raw("assistant/chunk", 0, {"turn": 1, "step": 1, "chunk": {"type": "rogue", "index": 0}}),
        "chunk",
    ),
    (
        "negative chunk index",
        raw(
            "assistant/chunk",
            0,
            {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": -1, "text": ""}},
        ),
        "index",
    ),
    (
        "float token count",
        raw("usage", 0, {"turn": 1, "step": 1, "usage": {"inputTokens": 1.5, "outputTokens": 1}}),
        "inputTokens",
    ),
    (
        "aborted reason not a string",
        raw("turn/end", 0, {"turn": 1, "reason": {"kind": "aborted", "reason": 3}}),
        "reason",
    ),
    ("reason without kind", raw("turn/end", 0, {"turn": 1, "reason": {"why": "x"}}), "kind"),
    (
        "unhashable tags",
        raw("user/message", 0, {"content": [{"type": [1]}], "source": {"kind": {"a": 1}}}),
        "Expected `str`, got `list` - at `$.data.content[0].type`",
    ),
    (
        "tool error without code",
        raw(
            "tool/result",
            0,
            {"turn": 1, "step": 1, "callId": "c", "content": [], "isError": True, "error": {"name": "E"}},
        ),
        "code",
    ),
]


@pytest.mark.parametrize(("label", "value", "fragment"), MALFORMED, ids=[label for label, _, _ in MALFORMED])
def test_rejects_malformed_events_naming_the_field(label: str, value: Any, fragment: str) -> None:
    with pytest.raises(HarnessError) as caught:
        parse_session_event(value)
    assert caught.value.code == "MALFORMED"
    assert fragment in str(caught.value)
    assert str(caught.value).startswith("malformed ")
    with pytest.raises(HarnessError) as from_line:
        parse_session_event_line(line_of(value))
    assert str(from_line.value) == str(caught.value)


def test_an_envelope_error_carries_the_shape_hint() -> None:
    with pytest.raises(HarnessError) as caught:
        parse_session_event({"type": "x", "seq": 0, "time": 0})
    assert str(caught.value).startswith("malformed session event: Object missing required field `data` - at `$`")
    assert "(a logged event is {type: str, seq: int >= 0, time: int >= 0, data}" in str(caught.value)


def test_parse_event_line_decodes_json_first() -> None:
    line = '{"type":"step/start","seq":4,"time":9,"data":{"turn":1,"step":2}}'
    assert parse_session_event_line(line) == StepStartEvent(seq=4, time=9, data=StepData(turn=1, step=2))
    assert parse_session_event_line(f"  {line}\n") == StepStartEvent(seq=4, time=9, data=StepData(turn=1, step=2))
    for torn in ('{"type":"assistant/chunk","seq":8,"ti', '{"type":"step/start","seq":"x",', '{"type":"zz","seq":"x",'):
        with pytest.raises(HarnessError, match="malformed session event: not valid JSON") as caught:
            parse_session_event_line(torn)
        assert caught.value.code == "MALFORMED"
    with pytest.raises(HarnessError, match="not valid JSON"):
        parse_session_event_line('{"type":"x","seq":0,"time":0,"data":NaN}')


def test_session_event_line_is_compact_utf8_in_envelope_key_order() -> None:
    untyped = UntypedEvent(type="custom", seq=2, time=5, data={"text": "ü ✓", "n": 1})
    assert session_event_line(untyped) == '{"type":"custom","seq":2,"time":5,"data":{"text":"ü ✓","n":1}}'


@settings(deadline=None)
@given(
    st.text(),
    st.integers(min_value=0, max_value=2**63 - 1),
    st.integers(min_value=0, max_value=2**63 - 1),
    st.recursive(
        st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=10,
    ),
)
def test_property_an_untyped_event_line_is_the_compact_json_of_the_ordered_envelope(
    kind: str, seq: int, time: int, data: Any
) -> None:
    if event_class(kind) is not None:
        return
    event = UntypedEvent(type=kind, seq=seq, time=time, data=data)
    line = session_event_line(event)
    assert line == line_of(raw(kind, seq, data, time))
    assert parse_session_event_line(line) == event


# ------------------------------------------------------------- registered event types
class NoteData(msgspec.Struct, frozen=True, rename="camel"):
    note_text: str
    level: int = 0


class NoteEvent(SessionEventBase, frozen=True, tag="test/note"):
    data: NoteData


NOTE_LINE = '{"type":"test/note","seq":0,"time":1,"data":{"noteText":"hi","level":2}}'


@pytest.fixture
def note_type() -> Iterator[None]:
    dispose = register_event_type(NoteEvent)
    yield
    dispose()


def test_a_registered_type_decodes_typed_until_disposed() -> None:
    assert event_class("test/note") is None
    assert parse_session_event_line(NOTE_LINE) == UntypedEvent(
        type="test/note", seq=0, time=1, data={"noteText": "hi", "level": 2}
    )
    dispose = register_event_type(NoteEvent)
    try:
        assert event_class("test/note") is NoteEvent
        typed = parse_session_event_line(NOTE_LINE)
        assert typed == NoteEvent(seq=0, time=1, data=NoteData(note_text="hi", level=2))
        assert typed.type == "test/note"
        assert session_event_line(typed) == NOTE_LINE
        assert payload_type(NoteEvent) is NoteData
        with pytest.raises(HarnessError, match=r'malformed "test/note" event: Expected `str`, got `int`'):
            parse_session_event_line('{"type":"test/note","seq":0,"time":1,"data":{"noteText":5}}')
    finally:
        dispose()
    assert event_class("test/note") is None
    assert type(parse_session_event_line(NOTE_LINE)) is UntypedEvent
    dispose()  # a second call is a no-op
    assert event_class("test/note") is None


def test_registrations_are_counted() -> None:
    first = register_event_type(NoteEvent)
    second = register_event_type(NoteEvent)
    first()
    first()  # idempotent: still one registration left
    assert event_class("test/note") is NoteEvent
    second()
    assert event_class("test/note") is None


def test_another_class_for_a_defined_type_is_refused(note_type: None) -> None:
    class OtherNote(SessionEventBase, frozen=True, tag="test/note"):
        data: NoteData

    class OwnTurnStart(SessionEventBase, frozen=True, tag="turn/start"):
        data: NoteData

    for cls in (OtherNote, OwnTurnStart):
        with pytest.raises(HarnessError) as caught:
            register_event_type(cls)
        assert caught.value.code == "DUPLICATE_EVENT_TYPE"
    assert "already defined by NoteEvent" in _refusal(OtherNote)
    assert event_class("test/note") is NoteEvent


def _refusal(cls: Any) -> str:
    with pytest.raises(HarnessError) as caught:
        register_event_type(cls)
    return str(caught.value)


def test_registering_a_core_class_changes_nothing() -> None:
    dispose = register_event_type(TurnStartEvent)
    dispose()
    assert event_class("turn/start") is TurnStartEvent
    assert {event_class(cls.__struct_config__.tag) for cls in CORE_EVENT_TYPES} == set(CORE_EVENT_TYPES)  # type: ignore[arg-type]


def test_what_is_no_event_class_is_refused() -> None:
    class NoData(SessionEventBase, frozen=True, tag="test/nodata"):
        pass

    class PlainData(SessionEventBase, frozen=True, tag="test/plain"):
        data: int

    for cls in (SessionEventBase, NoteData, int, "test/note", NoData, PlainData):
        with pytest.raises(HarnessError) as caught:
            register_event_type(cls)  # type: ignore[arg-type]
        assert caught.value.code == "INVALID_EVENT_TYPE"
    assert _refusal(NoteData).endswith("NoteData is no event class: subclass SessionEventBase with tag=<event type>")
    assert "'test/note' is no event class" in _refusal("test/note")
    assert "declares no data field of a Struct type" in _refusal(PlainData)
    assert event_class("test/nodata") is None


def test_session_append_uses_the_registered_class(note_type: None) -> None:
    session = Session("s")
    typed = session.append(NoteEvent, NoteData(note_text="a"))
    by_name = session.append("test/note", {"noteText": "b"})
    assert type(by_name) is NoteEvent
    assert by_name.data == NoteData(note_text="b")
    assert typed.data.note_text == "a"
    with pytest.raises(HarnessError, match=r'malformed "test/note" event data'):
        session.append("test/note", {"noteText": 1})
    assert session.seq == 2


def test_session_append_of_a_class_not_registered_still_works() -> None:
    """A typed append needs no registration (reading such a log back does)."""
    session = Session("s")
    logged = session.append(NoteEvent, NoteData(note_text="a"))
    expected = f'{{"type":"test/note","seq":0,"time":{logged.time},"data":{{"noteText":"a","level":0}}}}'
    assert session_event_line(logged) == expected


# -------------------------------------------------------------------- headers
def test_parses_a_header_with_and_without_the_line_type() -> None:
    expected = SessionHeader(version=1, id="s", created_at=5, cwd="/w", parent_session="p")
    line_value = {
        "type": "session",
        "parentSession": "p",
        "cwd": "/w",
        "createdAt": 5,
        "id": "s",
        "version": 1,
    }
    parsed = parse_session_header(line_value)
    assert parsed == expected
    assert list(to_json(parsed)) == ["version", "id", "createdAt", "cwd", "parentSession"]
    assert parse_session_header({"version": 2, "id": "s", "createdAt": 0}) == SessionHeader(
        version=2, id="s", created_at=0
    )
    assert parse_session_header({"version": 1, "id": "s", "createdAt": 0, "unknown": 1}) == SessionHeader(
        version=1, id="s", created_at=0
    )


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ({"type": "event", "version": 1, "id": "s", "createdAt": 0}, 'must be {"type":"session"'),
        ({"version": "1", "id": "s", "createdAt": 0}, "$.version"),
        ({"version": 1, "id": "s", "createdAt": 1.5}, "$.createdAt"),
        ({"version": 1, "createdAt": 0}, "missing required field `id`"),
        ({"version": 1, "id": "s", "createdAt": 0, "cwd": None}, "$.cwd"),
        ({"version": 1, "id": "s", "createdAt": 0, "parentSession": 3}, "$.parentSession"),
        ({"version": 1, "id": "s", "createdAt": -1}, "$.createdAt"),
        ("header", "$"),
    ],
)
def test_rejects_malformed_headers(value: Any, fragment: str) -> None:
    with pytest.raises(HarnessError, match="malformed session header") as caught:
        parse_session_header(value)
    assert caught.value.code == "MALFORMED"
    assert fragment in str(caught.value)


def test_header_line_requires_the_session_type_and_valid_json() -> None:
    assert parse_session_header_line('{"type":"session","version":1,"id":"a","createdAt":3}') == SessionHeader(
        version=1, id="a", created_at=3
    )
    first_event = '{"type":"turn/start","seq":0,"time":0,"data":{"turn":1,"trigger":{"kind":"continuation"}}}'
    for line in ('{"version":1,"id":"a","createdAt":3}', "[1]", '{"type":"turn/start"}', first_event):
        with pytest.raises(HarnessError, match=r'must be \{"type":"session"') as caught:
            parse_session_header_line(line)
        assert caught.value.code == "MALFORMED"
    with pytest.raises(HarnessError, match="malformed session header: not JSON"):
        parse_session_header_line("{not json")


def test_header_line_round_trips_with_the_exact_key_order_and_omits_absent_keys() -> None:
    bare = SessionHeader(version=1, id="s", created_at=0)
    assert header_line(bare) == '{"type":"session","version":1,"id":"s","createdAt":0}'
    full = SessionHeader(parent_session="p", cwd="/wörk", created_at=7, id="s", version=1)
    line = header_line(full)
    assert line == '{"type":"session","version":1,"id":"s","createdAt":7,"cwd":"/wörk","parentSession":"p"}'
    assert parse_session_header_line(line) == full
    assert parse_session_header_line(line.encode()) == full
    assert full.cwd == "/wörk"
    assert bare.cwd is UNSET


# ----------------------------------------------------------- interop acceptance
def _conformance_logs() -> list[Path]:
    assert CONFORMANCE.is_dir(), f"conformance folder missing: {CONFORMANCE} (restore it from the repository)"
    logs = sorted(CONFORMANCE.glob("*/session.jsonl")) + sorted(CONFORMANCE.glob("*/session.golden.jsonl"))
    assert logs, f"no session logs under {CONFORMANCE}"
    return logs


def test_every_reference_log_line_parses_and_re_serializes_byte_identical() -> None:
    """Interop: each line of every recorded session.jsonl / session.golden.jsonl round-trips."""
    events_seen = 0
    kinds: set[str] = set()
    for path in _conformance_logs():
        lines = path.read_text(encoding="utf-8").splitlines()
        header = parse_session_header_line(lines[0])
        assert header_line(header) == lines[0], path
        events: list[SessionEvent] = [parse_session_event_line(line) for line in lines[1:]]
        for index, (line, parsed) in enumerate(zip(lines[1:], events, strict=True)):
            assert parsed.seq == index, (path, index)
            assert session_event_line(parsed) == line, (path, index)
            kinds.add(parsed.type)
        events_seen += len(events)
        replayed = Session(header.id, events, header)
        assert list(replayed.events) == events
    assert events_seen > 0
    assert {
        "turn/start",
        "user/message",
        "assistant/chunk",
        "assistant/message",
        "tool/call",
        "tool/result",
    } <= kinds


def test_a_missing_conformance_folder_fails_loudly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(f"{__name__}.CONFORMANCE", tmp_path / "absent")
    with pytest.raises(AssertionError, match="conformance folder missing"):
        _conformance_logs()


def test_a_session_built_with_these_types_serializes_to_camel_case_and_loads_back_equal() -> None:
    header = SessionHeader(version=1, id="wire", created_at=11, cwd="/w", parent_session="root")
    session = Session("wire", header=header)
    for kind, data in VALID:
        session.append(kind, data)
    lines = [header_line(session.header)] + [session_event_line(logged) for logged in session.events]
    text_form = "\n".join(lines)
    for name in (
        "createdAt",
        "parentSession",
        "toolCallId",
        "callId",
        "isError",
        "blockType",
        "argumentsDelta",
        "inputTokens",
        "outputTokens",
        "cacheReadTokens",
        "cacheWriteTokens",
        "reasoningTokens",
        "mimeType",
        "agentId",
    ):
        assert f'"{name}":' in text_form, name
    for snake in ("created_at", "tool_call_id", "call_id", "is_error", "input_tokens", "mime_type"):
        assert snake not in text_form
    assert "null" not in text_form
    loaded_header = parse_session_header_line(lines[0])
    loaded = [parse_session_event_line(line) for line in lines[1:]]
    assert loaded_header == session.header
    assert loaded == list(session.events)
    assert Session("wire", loaded, loaded_header).derive_messages() == session.derive_messages()


KEYS = st.sampled_from(
    [
        "type",
        "kind",
        "content",
        "source",
        "turn",
        "step",
        "chunk",
        "block",
        "reason",
        "trigger",
        "usage",
        "text",
        "index",
        "callId",
        "isError",
        "error",
        "name",
        "code",
        "message",
        "inputTokens",
        "outputTokens",
    ]
)
TAGS = st.sampled_from(
    [
        "text",
        "tool-call",
        "tool-result",
        "image",
        "user",
        "plugin",
        "message",
        "error",
        "finish",
        "usage",
        "x",
    ]
)
fuzz = st.recursive(
    st.none() | st.booleans() | st.integers(-2, 3) | st.floats(allow_nan=False, allow_infinity=False) | TAGS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=5),
    max_leaves=20,
)
EVENT_TYPES = st.sampled_from([*sorted({kind for kind, _ in VALID}), "plugin/x"])


def _parse_or_code(value: Any) -> tuple[Any, str | None]:
    try:
        return parse_session_event(value), None
    except HarnessError as error:
        return None, error.code


@settings(deadline=None)
@given(EVENT_TYPES, fuzz)
def test_property_parse_either_accepts_or_raises_malformed(kind: str, data: Any) -> None:
    """Any JSON input parses (and its line reads back equal) or raises HarnessError(MALFORMED), nothing else."""
    value = raw(kind, 0, data)
    parsed, code = _parse_or_code(value)
    if code is None:
        line = session_event_line(parsed)
        assert parse_session_event_line(line) == parsed
        assert parse_session_event(to_json(parsed)) == parsed
        if type(parsed) is UntypedEvent:
            assert to_json(parsed) == value
    else:
        assert code == "MALFORMED"
        with pytest.raises(HarnessError):
            parse_session_event_line(line_of(value))
