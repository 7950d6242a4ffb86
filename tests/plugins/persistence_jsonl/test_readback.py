"""Bulk read-back of stored events (dsh.core.persistence.readback): the verdicts of
``parse_session_event`` in one decode per line or row, byte-identical write-back, the
lone-surrogate path and the GC pause.

The backends' scans rely on these helpers, so they are tested beside the JSONL backend.
"""

from __future__ import annotations

import copy
import gc
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.core.errors import HarnessError
from dsh.core.persistence import loads_stored_json, parse_event_lines, parse_event_rows, paused_gc
from dsh.core.session import (
    StepStartEvent,
    UntypedEvent,
    UserMessageEvent,
    parse_session_event,
    parse_session_event_line,
    session_event_line,
)
from tests.core.persistence.helpers import text

USER = {"kind": "user"}
PLUGIN = {"kind": "plugin", "plugin": "p"}
AGENT = {"kind": "agent", "agentId": "a1"}
TOOL_CALL = {"type": "tool-call", "id": "c1", "name": "bash", "arguments": '{"command":"ls"}'}
IMAGE = {"type": "image", "url": "data:x", "mimeType": "image/png", "cache": "ephemeral"}
TOOL_RESULT = {"type": "tool-result", "toolCallId": "c1", "content": [text("out"), IMAGE], "isError": False}
USAGE = {"inputTokens": 1, "outputTokens": 2, "cacheReadTokens": 0, "cacheWriteTokens": 3, "reasoningTokens": 4}


def chunk(value: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return ("assistant/chunk", {"turn": 1, "step": 1, "chunk": value})


COMMON: list[tuple[str, Any]] = [
    ("turn/start", {"turn": 1, "trigger": {"kind": "message", "source": USER}}),
    ("turn/start", {"turn": 2, "trigger": {"kind": "continuation"}}),
    ("turn/start", {"turn": 3, "trigger": {"kind": "injection", "source": PLUGIN}}),
    ("turn/start", {"turn": 4, "trigger": {"kind": "timer"}}),
    ("turn/start", {"turn": 5, "trigger": {"kind": "message", "source": {"kind": "robot"}}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "aborted"}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "aborted", "reason": "cancelled"}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "error", "message": "boom"}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "error", "message": "boom", "code": "X"}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "disposed"}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "max-tokens"}}),
    ("turn/end", {"turn": 0, "reason": {"kind": "interrupted"}}),
    ("turn/end", {"turn": 1, "reason": {"kind": "preempted"}}),
    ("step/start", {"turn": 1, "step": 1}),
    ("step/end", {"turn": 1, "step": 1}),
    ("user/message", {"content": [text("hi"), {"type": "text", "text": "c", "cache": "ephemeral"}], "source": USER}),
    ("user/message", {"content": [], "source": USER}),
    ("context/message", {"content": [text("ctx")], "source": AGENT}),
    ("context/message", {"content": [text("ctx")], "source": PLUGIN}),
    chunk({"type": "block-start", "index": 0, "blockType": "text"}),
    chunk({"type": "text-delta", "index": 0, "text": "h"}),
    chunk({"type": "reasoning-delta", "index": 1, "text": "r"}),
    chunk({"type": "tool-call-delta", "index": 2, "id": "c1", "name": "bash", "argumentsDelta": "{"}),
    chunk({"type": "tool-call-delta", "index": 2, "id": "c1", "argumentsDelta": "}"}),
    chunk({"type": "block-end", "index": 2, "block": TOOL_CALL}),
    chunk({"type": "block-end", "index": 0, "block": {"type": "reasoning", "text": "r"}}),
    chunk({"type": "usage", "usage": USAGE}),
    chunk({"type": "usage", "usage": {"inputTokens": 0, "outputTokens": 0}}),
    chunk({"type": "finish", "reason": {"kind": "stop"}}),
    chunk({"type": "finish", "reason": {"kind": "tool-calls"}}),
    chunk({"type": "finish", "reason": {"kind": "max-tokens"}}),
    chunk({"type": "finish", "reason": {"kind": "aborted"}}),
    chunk({"type": "finish", "reason": {"kind": "error", "message": "m"}}),
    chunk({"type": "finish", "reason": {"kind": "error", "message": "m", "code": "C"}}),
    chunk({"type": "finish", "reason": {"kind": "content-filter"}}),
    (
        "assistant/message",
        {"turn": 1, "step": 1, "content": [{"type": "reasoning", "text": "think"}, text("a"), TOOL_CALL, IMAGE]},
    ),
    ("assistant/message", {"turn": 1, "step": 1, "content": [{"type": "image", "url": "u"}]}),
    ("tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "bash", "arguments": "{}"}),
    ("tool/result", {"turn": 1, "step": 1, "callId": "c1", "content": [text("out")], "isError": False}),
    (
        "tool/result",
        {
            "turn": 1,
            "step": 1,
            "callId": "c1",
            "content": [TOOL_RESULT, {"type": "tool-result", "toolCallId": "c2", "content": [], "cache": "ephemeral"}],
            "isError": True,
            "error": {"name": "E", "code": "e"},
        },
    ),
    ("steering/message", {"turn": 1, "content": [text("steer")], "source": USER}),
    ("usage", {"turn": 1, "step": 1, "usage": {"inputTokens": 10, "outputTokens": 5}}),
    ("error", {"turn": 1, "step": 1, "message": "failed"}),
    ("error", {"turn": 1, "step": 1, "message": "failed", "code": "ABORTED"}),
]
"""Valid events of every known type and variant, unknown variants included (SPEC §0.6)."""


def nested_results(depth: int) -> dict[str, Any]:
    block: dict[str, Any] = text("leaf")
    for level in range(depth):
        block = {"type": "tool-result", "toolCallId": f"c{level}", "content": [block]}
    return block


UNUSUAL: list[tuple[str, Any]] = [
    ("plugin/custom", {"anything": [1, {"goes": None}]}),
    ("plugin/none", None),
    ("user/message", {"content": [{"type": "audio", "data": "..."}], "source": USER}),
    ("user/message", {"content": [text("a")], "source": {"kind": "robot", "serial": 7}}),
    ("assistant/message", {"turn": 1, "step": 1, "content": [nested_results(8)]}),
    ("assistant/message", {"turn": 1, "step": 1, "content": [{"type": "video", "frames": [1, 2.5, {"a": []}]}]}),
]
"""Valid events with unknown types or variants, and deep nesting."""

EXTRA_KEYS: list[tuple[str, Any]] = [
    ("tool/result", {"turn": 1, "step": 1, "callId": "c", "content": [], "isError": False, "extra": "kept"}),
    ("usage", {"turn": 1, "step": 1, "usage": {"inputTokens": 1, "outputTokens": 2, "note": 1.5}}),
]
"""Valid events of known types with keys their class does not name (accepted; the keys are not kept)."""


def raw_event(kind: str, seq: int, data: Any, time: int = 0) -> dict[str, Any]:
    return {"type": kind, "seq": seq, "time": time, "data": data}


def line_of(raw: Any) -> str:
    return json.dumps(raw, ensure_ascii=False, separators=(",", ":"))


def verdict(raw: Any) -> tuple[str, Any]:
    """What ``parse_session_event`` says about ``raw``: ``("ok", its line)`` or ``("bad", code)``."""
    try:
        return "ok", session_event_line(parse_session_event(copy.deepcopy(raw)))
    except HarnessError as error:
        return "bad", error.code


def _outcome(item: object) -> tuple[str, Any]:
    if isinstance(item, HarnessError):
        return "bad", item.code
    assert not isinstance(item, Exception), item
    return "ok", session_event_line(item)  # type: ignore[arg-type]


def bulk_verdict(raw: Any) -> tuple[str, Any]:
    """The same verdict through both bulk readers (JSON text line, and row columns when the envelope allows)."""
    [item] = parse_event_lines([line_of(raw)])
    result = _outcome(item)
    columns = isinstance(raw, dict) and set(raw) == {"type", "seq", "time", "data"}
    if columns and isinstance(raw["type"], str) and type(raw["seq"]) is int and type(raw["time"]) is int:
        [row] = parse_event_rows([(raw["seq"], raw["type"], raw["time"], line_of(raw["data"]))])
        assert _outcome(row) == result
    return result


WRONG_VALUES: list[Any] = [None, 1.5, True, -1, 7, "s", "ephemeral", [], {}, [1], {"kind": 1}]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path inside ``value`` (dict keys and list indexes)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*prefix, key)
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*prefix, index)
            yield from paths(item, (*prefix, index))


def containers(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every dict and list inside ``value`` (the root included)."""
    if isinstance(value, dict | list):
        yield prefix
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            yield from containers(item, (*prefix, key))


def at(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def mutations(raw: dict[str, Any]) -> Iterator[Any]:
    """``raw`` with one change each: a key removed, a value replaced, a key or item added."""
    for path in paths(raw):
        parent, key = path[:-1], path[-1]
        removed = copy.deepcopy(raw)
        del at(removed, parent)[key]
        yield removed
        for wrong in WRONG_VALUES:
            replaced = copy.deepcopy(raw)
            at(replaced, parent)[key] = copy.deepcopy(wrong)
            yield replaced
    for path in containers(raw):
        grown = copy.deepcopy(raw)
        target = at(grown, path)
        if isinstance(target, dict):
            target["zz"] = 1
        else:
            target.append({"type": "text"})
        yield grown


SAMPLES = [raw_event(kind, index, data, time=1_700_000_000_000) for index, (kind, data) in enumerate(COMMON)]


def test_every_known_and_unknown_shape_decodes_once_and_writes_back_byte_identical() -> None:
    """(lines and rows give the typed events; each one encodes back to exactly its stored line)"""
    raws = [*SAMPLES, *(raw_event(kind, 0, data) for kind, data in UNUSUAL)]
    lines = [line_of(raw) for raw in raws]
    parsed = parse_event_lines(lines)
    assert [session_event_line(item) for item in parsed] == lines  # type: ignore[arg-type]
    assert parsed == [parse_session_event_line(line) for line in lines]
    rows = [(raw["seq"], raw["type"], raw["time"], line_of(raw["data"])) for raw in raws]
    assert parse_event_rows(rows) == parsed
    assert type(parsed[0]).__name__ == "TurnStartEvent"
    assert type(parsed[len(SAMPLES)]) is UntypedEvent


@pytest.mark.parametrize("index", range(len(SAMPLES)), ids=lambda index: SAMPLES[index]["type"])
def test_every_single_change_to_an_event_gets_the_verdict_of_parse_session_event(index: int) -> None:
    """(the bulk readers refuse what parse_session_event refuses and keep what it keeps)"""
    raw = SAMPLES[index]
    assert bulk_verdict(raw) == verdict(raw) == ("ok", line_of(raw))
    changed = 0
    for mutated in mutations(raw):
        assert bulk_verdict(mutated) == verdict(mutated), mutated
        changed += 1
    assert changed > len(WRONG_VALUES)


@pytest.mark.parametrize(("kind", "data"), EXTRA_KEYS, ids=[kind for kind, _ in EXTRA_KEYS])
def test_keys_a_known_class_does_not_name_are_accepted(kind: str, data: Any) -> None:
    """(a newer writer's extra field does not make the event malformed)"""
    raw = raw_event(kind, 0, data)
    assert bulk_verdict(raw) == verdict(raw)
    assert verdict(raw)[0] == "ok"


JSON_LEAVES = st.none() | st.booleans() | st.integers(-2, 3) | st.floats(allow_nan=False, allow_infinity=False)
fuzz = st.recursive(
    JSON_LEAVES | st.sampled_from(["text", "tool-result", "user", "error", "finish", "usage", "ephemeral", "x"]),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(["type", "kind", "content", "text", "turn", "step", "index", "reason", "message", "code"]),
            children,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(deadline=None, max_examples=300)
@given(st.sampled_from(range(len(SAMPLES))), st.data())
def test_property_a_random_value_anywhere_in_an_event_gets_the_verdict_of_parse_session_event(
    index: int, data: st.DataObject
) -> None:
    """(fuzz: replace any part of an event with random JSON; line, row and value decoding agree)"""
    raw = copy.deepcopy(SAMPLES[index])
    path = data.draw(st.sampled_from(list(paths(raw))))
    at(raw, path[:-1])[path[-1]] = data.draw(fuzz)
    assert bulk_verdict(raw) == verdict(raw)


def test_lines_that_are_not_json_events_are_reported_not_raised() -> None:
    """(bad UTF-8, bad JSON, NaN, overflow, too deep, not an event: each line gets its own reason)"""
    good = line_of(SAMPLES[0])
    lines: list[str | bytes] = [
        b"\xff\xfe" + good.encode(),
        good.encode(),
        "{not json",
        good + " trailing",
        '{"type":"x","seq":0,"time":0,"data":NaN}',
        '{"type":"x","seq":0,"time":0,"data":-Infinity}',
        '{"type":"x","seq":0,"time":0,"data":1e999}',
        "[" * 100_000 + "]" * 100_000,
        "[1,2]",
        "",
        "  " + good + "\r",
    ]
    parsed = parse_event_lines(lines)
    assert [type(item).__name__ for item in parsed] == [
        "HarnessError",
        "TurnStartEvent",
        "HarnessError",
        "HarnessError",
        "HarnessError",
        "HarnessError",
        "HarnessError",
        "RecursionError",
        "HarnessError",
        "HarnessError",
        "TurnStartEvent",
    ]
    assert parsed[1] == parsed[10] == parse_session_event(SAMPLES[0])
    assert all(item.code == "MALFORMED" for item in parsed if isinstance(item, HarnessError))
    assert "not valid JSON" in str(parsed[4])


def test_lone_surrogate_escapes_from_a_reference_writer_load() -> None:
    """(JSON.stringify writes a lone surrogate as an escape: the event is kept, bad lines stay holes)"""
    escaped = '{"type":"user/message","seq":0,"time":0,"data":{"content":[{"type":"text","text":"a\\ud800b"}],"source":{"kind":"user"}}}'
    nan = '{"type":"x","seq":1,"time":0,"data":["\\udc00",NaN]}'
    wrong = '{"type":"step/start","seq":2,"time":0,"data":{"turn":"\\uDFFF","step":1}}'
    deep = '{"type":"x","seq":3,"time":0,"data":"\\ud800",' + '"y":' + "[" * 100_000 + "]" * 100_000 + "}"
    bad_utf8 = b'{"type":"x","seq":4,"time":0,"data":"\\ud800\xff"}'
    parsed = parse_event_lines([escaped, escaped.encode(), nan, wrong, deep, bad_utf8])
    assert type(parsed[0]) is UserMessageEvent
    assert parsed[0].data.content[0].text == "a\ud800b"  # type: ignore[union-attr]
    assert parsed[1] == parsed[0]
    assert isinstance(parsed[2], ValueError)
    assert "NaN is not a JSON value" in str(parsed[2])
    assert isinstance(parsed[3], ValueError | HarnessError)  # a str where an int belongs: a hole either way
    assert isinstance(parsed[4], RecursionError)
    assert isinstance(parsed[5], UnicodeDecodeError)
    [row] = parse_event_rows([(0, "user/message", 0, escaped[escaped.index('"data":') + 7 : -1])])
    assert row == parsed[0]


def test_rows_whose_data_is_not_json_are_reported_not_raised() -> None:
    """(a row holds the envelope in columns and the data as JSON text)"""
    parsed = parse_event_rows(
        [(0, "step/start", 5, '{"turn":1,"step":1}'), (1, "x", 0, "{torn"), (2, "x", 0, "NaN"), (3, 'q"uote', 0, "1")]
    )
    assert type(parsed[0]) is StepStartEvent
    assert session_event_line(parsed[0]) == '{"type":"step/start","seq":0,"time":5,"data":{"turn":1,"step":1}}'
    assert isinstance(parsed[1], HarnessError)
    assert isinstance(parsed[2], HarnessError)
    assert parsed[3] == UntypedEvent(type='q"uote', seq=3, time=0, data=1)
    odd = parse_event_rows([(0, 5, 0, "1"), (-1, "x", 0, "1"), (True, "x", 0, "1"), (0, "x", -2, "1")])  # type: ignore[list-item]
    assert all(isinstance(item, HarnessError) and item.code == "MALFORMED" for item in odd)
    deep = parse_event_rows([(0, "x", 0, "[" * 100_000 + "]" * 100_000), (1, "step/start", 0, '{"turn":1}')])
    assert isinstance(deep[0], RecursionError)
    assert isinstance(deep[1], HarnessError)
    assert "step" in str(deep[1])


def test_loads_stored_json_decodes_like_json_loads_but_only_json_values() -> None:
    """(whitespace around a value is fine; NaN, infinities and trailing data are refused)"""
    assert loads_stored_json('{"a":[1,2.5,"é",null,true]}') == {"a": [1, 2.5, "é", None, True]}
    assert loads_stored_json(" \t[1] \n") == [1]
    assert loads_stored_json("0") == 0
    for refused in ("NaN", "[Infinity]", "-Infinity", "1e400", '{"a":1} {"b":2}', "", "\ufeff{}"):
        with pytest.raises(ValueError):
            loads_stored_json(refused)


# ------------------------------------------------------------------ paused_gc
@pytest.fixture
def gc_enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        if not was:
            gc.disable()  # pragma: no cover - pytest runs with the collector on


@pytest.mark.usefixtures("gc_enabled")
def test_paused_gc_disables_the_collector_and_nests() -> None:
    """(the collector is off inside, on again only when the outermost pause ends)"""
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


@pytest.mark.usefixtures("gc_enabled")
def test_paused_gc_leaves_a_disabled_collector_disabled_and_restores_it_on_error() -> None:
    """(a caller's gc.disable() is respected; an exception still ends the pause)"""
    gc.disable()
    try:
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(RuntimeError, match="boom"), paused_gc():
        raise RuntimeError("boom")
    assert gc.isenabled()


@pytest.mark.usefixtures("gc_enabled")
def test_objects_made_during_a_pause_join_the_oldest_generation_without_a_collection() -> None:
    """(no pass over the new objects when the pause ends; the young generation starts empty)"""
    collections = gc.get_stats()[0]["collections"]
    with paused_gc():
        marker = [[index] for index in range(20_000)]
        assert gc.get_count()[0] > 10_000
    assert gc.get_count()[0] < 700
    assert gc.get_stats()[0]["collections"] == collections
    assert any(item is marker for item in gc.get_objects(generation=2))
    assert gc.get_freeze_count() == 0


@pytest.mark.usefixtures("gc_enabled")
def test_paused_gc_never_undoes_a_callers_freeze() -> None:
    """(with objects frozen by someone else, the pause ends with a plain enable)"""
    keep = [[index] for index in range(1_000)]
    gc.freeze()
    try:
        with paused_gc():
            _garbage = [[index] for index in range(1_000)]
        assert gc.get_freeze_count() >= len(keep)  # still frozen: unfreeze() would have emptied it
        assert gc.isenabled()
    finally:
        gc.unfreeze()


@pytest.mark.usefixtures("gc_enabled")
def test_overlapping_pauses_from_two_threads_never_leave_the_collector_off() -> None:
    """(the first pause to start disables, the last to end enables, whatever the order)"""
    entered, release = threading.Event(), threading.Event()
    seen: list[bool] = []

    def other() -> None:
        with paused_gc():
            entered.set()
            release.wait()
        seen.append(gc.isenabled())

    with paused_gc():
        thread = threading.Thread(target=other)
        thread.start()
        entered.wait()
    assert not gc.isenabled()  # the other thread's pause is still running
    release.set()
    thread.join()
    assert seen == [True]
    assert gc.isenabled()
