"""Edge validation and JSONL text of session data (SPEC §3.1, §4b), and the interop acceptance."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.core.errors import HarnessError
from dsh.core.session import (
    Session,
    SessionHeader,
    header_line,
    parse_session_event,
    parse_session_event_line,
    parse_session_header,
    parse_session_header_line,
    session_event_line,
)
from tests.core.session.helpers import event, text

# The reference conformance cases, kept in the repository beside the ACP snapshot tests.
CONFORMANCE = Path(__file__).resolve().parents[2] / "examples" / "acp" / "reference"

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
def test_parses_every_known_event_type_into_an_equal_plain_copy(kind: str, data: Any) -> None:
    raw = event(kind, 3, data, time=1_700_000_000_000)
    parsed = parse_session_event(raw)
    assert parsed == raw
    assert parsed is not raw
    assert parsed["data"] is not raw["data"]
    assert json.loads(session_event_line(parsed)) == raw


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
    ("tool/result", {"turn": 1, "step": 1, "callId": "c", "content": [], "isError": False, "extra": "kept"}),
]


@pytest.mark.parametrize(("kind", "data"), OPEN, ids=[kind for kind, _ in OPEN])
def test_accepts_unknown_types_and_variants_of_the_open_unions(kind: str, data: Any) -> None:
    raw = event(kind, 0, data)
    assert parse_session_event(raw) == raw


MALFORMED: list[tuple[str, Any, str]] = [
    ("not a mapping", [1, 2], "(root)"),
    ("missing data", {"type": "x", "seq": 0, "time": 0}, "data: Field required"),
    (
        "negative seq",
        {"type": "x", "seq": -1, "time": 0, "data": None},
        "seq: Input should be greater than or equal to 0",
    ),
    ("float seq", {"type": "x", "seq": 1.0, "time": 0, "data": None}, "seq: Input should be a valid integer"),
    ("string seq", {"type": "x", "seq": "1", "time": 0, "data": None}, "seq"),
    ("bool time", {"type": "x", "seq": 0, "time": True, "data": None}, "time"),
    ("int type", {"type": 5, "seq": 0, "time": 0, "data": None}, "type: Input should be a valid string"),
    ("string turn", event("step/start", 0, {"turn": "1", "step": 1}), '"step/start" event (seq 0): turn'),
    ("missing trigger source", event("turn/start", 0, {"turn": 1, "trigger": {"kind": "message"}}), "source"),
    (
        "plugin source without plugin",
        event("user/message", 0, {"content": [], "source": {"kind": "plugin"}}),
        "plugin",
    ),
    (
        "missing isError",
        event("tool/result", 0, {"turn": 1, "step": 1, "callId": "c", "content": []}),
        "isError",
    ),
    (
        "null isError",
        event("tool/result", 0, {"turn": 1, "step": 1, "callId": "c", "content": [], "isError": None}),
        "isError",
    ),
    ("null optional code", event("error", 0, {"turn": 1, "step": 1, "message": "m", "code": None}), "code"),
    (
        "bad cache value",
        event(
            "user/message",
            0,
            {"content": [{"type": "text", "text": "t", "cache": "forever"}], "source": SOURCE},
        ),
        "cache",
    ),
    (
        "text block without text",
        event("user/message", 0, {"content": [{"type": "text"}], "source": SOURCE}),
        "text",
    ),
    ("block without type", event("user/message", 0, {"content": [{"text": "t"}], "source": SOURCE}), "type"),
    ("content not a list", event("user/message", 0, {"content": "hi", "source": SOURCE}), "content"),
    (
        "unknown chunk type (closed union)",
        event("assistant/chunk", 0, {"turn": 1, "step": 1, "chunk": {"type": "rogue", "index": 0}}),
        "chunk",
    ),
    (
        "negative chunk index",
        event(
            "assistant/chunk",
            0,
            {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": -1, "text": ""}},
        ),
        "index",
    ),
    (
        "float token count",
        event("usage", 0, {"turn": 1, "step": 1, "usage": {"inputTokens": 1.5, "outputTokens": 1}}),
        "inputTokens",
    ),
    (
        "aborted reason not a string",
        event("turn/end", 0, {"turn": 1, "reason": {"kind": "aborted", "reason": 3}}),
        "reason",
    ),
    ("reason without kind", event("turn/end", 0, {"turn": 1, "reason": {"why": "x"}}), "kind"),
    (
        "unhashable tags",
        event("user/message", 0, {"content": [{"type": [1]}], "source": {"kind": {"a": 1}}}),
        "Input should be a valid string",
    ),
    (
        "tool error without code",
        event(
            "tool/result",
            0,
            {"turn": 1, "step": 1, "callId": "c", "content": [], "isError": True, "error": {"name": "E"}},
        ),
        "code",
    ),
]


@pytest.mark.parametrize(("label", "raw", "fragment"), MALFORMED, ids=[label for label, _, _ in MALFORMED])
def test_rejects_malformed_events_naming_the_field(label: str, raw: Any, fragment: str) -> None:
    with pytest.raises(HarnessError) as caught:
        parse_session_event(raw)
    assert caught.value.code == "MALFORMED"
    assert fragment in str(caught.value)
    assert str(caught.value).startswith("malformed ")


def test_rejects_non_json_input_as_malformed() -> None:
    with pytest.raises(HarnessError, match=r"malformed session event: not a JSON value at \$.data") as caught:
        parse_session_event({"type": "x", "seq": 0, "time": 0, "data": (1,)})
    assert caught.value.code == "MALFORMED"


def test_many_problems_are_summarized() -> None:
    with pytest.raises(HarnessError, match=r"\(and 1 more\)"):
        parse_session_event({"type": 1, "seq": "a", "time": "b"})
    with pytest.raises(HarnessError, match=r"\(and 2 more\)"):
        parse_session_event(event("tool/call", 0, {"turn": "1", "step": "1", "callId": 1, "name": 2, "arguments": 3}))


def test_parse_event_line_decodes_json_first() -> None:
    line = '{"type":"step/start","seq":4,"time":9,"data":{"turn":1,"step":2}}'
    assert parse_session_event_line(line) == event("step/start", 4, {"turn": 1, "step": 2}, time=9)
    with pytest.raises(HarnessError, match="malformed session event: not valid JSON") as caught:
        parse_session_event_line('{"type":"assistant/chunk","seq":8,"ti')
    assert caught.value.code == "MALFORMED"
    with pytest.raises(HarnessError, match="non-finite"):
        parse_session_event_line('{"type":"x","seq":0,"time":0,"data":NaN}')


@pytest.mark.parametrize(("kind", "data"), VALID[:4], ids=[kind for kind, _ in VALID[:4]])
def test_a_handed_over_event_is_checked_in_place_not_copied(kind: str, data: Any) -> None:
    """copy=False returns the very value it checked (for fresh json.loads output)."""
    raw = json.loads(json.dumps(event(kind, 3, data)))
    assert parse_session_event(raw, copy=False) is raw


def test_a_handed_over_event_gets_the_same_verdicts() -> None:
    """copy=False still rejects non-JSON values and malformed shapes."""
    with pytest.raises(HarnessError, match=r"malformed session event: not a JSON value at \$.data"):
        parse_session_event({"type": "x", "seq": 0, "time": 0, "data": [float("inf")]}, copy=False)
    with pytest.raises(HarnessError, match="seq: Input should be greater than or equal to 0"):
        parse_session_event({"type": "x", "seq": -1, "time": 0, "data": None}, copy=False)


def test_a_parsed_line_is_not_copied_again() -> None:
    """parse_session_event_line keeps what json.loads produced (equal, plain, in file key order)."""
    line = '{"type":"user/message","seq":0,"time":1,"data":{"content":[{"type":"text","text":"ü"}],"source":{"kind":"user"}}}'
    parsed = parse_session_event_line(line)
    assert session_event_line(parsed) == line


def test_validators_are_built_once_on_first_use() -> None:
    """The pydantic shapes are defined on the first parse (not at import) and their validators then reused."""
    probe = (
        "import sys, dsh.core.session; print('dsh.core.session.shapes' in sys.modules); "
        "dsh.core.session.parse_session_header({'version': 1, 'id': 's', 'createdAt': 0}); "
        "from dsh.core.session import shapes; print(shapes.adapter.cache_info().currsize)"
    )
    fresh = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert fresh.stdout.split() == ["False", "1"]

    from dsh.core.session import shapes

    parse_session_event(event("step/start", 0, {"turn": 1, "step": 1}))
    built = shapes.adapter.cache_info().currsize
    parse_session_event(event("step/start", 1, {"turn": 1, "step": 2}))
    parse_session_header({"version": 1, "id": "s", "createdAt": 0})
    parse_session_header({"version": 1, "id": "t", "createdAt": 0})
    assert shapes.adapter.cache_info().currsize <= built + 1
    assert shapes.adapter(shapes.Envelope) is shapes.adapter(shapes.Envelope)


def test_event_line_writes_an_unusual_envelope_like_json_dumps() -> None:
    """A subclassed type or seq (not what a session logs) is written by the general encoder."""

    class Kind(str):
        pass

    class Seq(int):
        pass

    unusual: Any = {"type": Kind("custom"), "seq": Seq(2), "time": True, "data": {"a": [1]}}
    assert session_event_line(unusual) == '{"type":"custom","seq":2,"time":true,"data":{"a":[1]}}'


@settings(deadline=None)
@given(
    st.text(),
    st.integers(min_value=0),
    st.integers(),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
        max_leaves=10,
    ),
)
def test_property_event_line_is_the_compact_json_of_the_ordered_envelope(
    kind: str, seq: int, time: int, data: Any
) -> None:
    """The spliced fast path writes exactly what encoding the ordered envelope writes."""
    line = session_event_line({"type": kind, "seq": seq, "time": time, "data": data})
    envelope = {"type": kind, "seq": seq, "time": time, "data": data}
    assert line == json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))


def test_event_line_is_compact_utf8_in_envelope_key_order() -> None:
    shuffled: Any = {"data": {"text": "ü ✓", "n": 1}, "time": 5, "type": "custom", "seq": 2}
    assert session_event_line(shuffled) == '{"type":"custom","seq":2,"time":5,"data":{"text":"ü ✓","n":1}}'


# -------------------------------------------------------------------- headers
def test_parses_a_header_with_and_without_the_line_type() -> None:
    expected: SessionHeader = {"version": 1, "id": "s", "createdAt": 5, "cwd": "/w", "parentSession": "p"}
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
    assert list(parsed) == ["version", "id", "createdAt", "cwd", "parentSession"]
    assert parse_session_header({"version": 2, "id": "s", "createdAt": 0}) == {
        "version": 2,
        "id": "s",
        "createdAt": 0,
    }
    assert parse_session_header({"version": 1, "id": "s", "createdAt": 0, "unknown": 1}) == {
        "version": 1,
        "id": "s",
        "createdAt": 0,
    }


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"type": "event", "version": 1, "id": "s", "createdAt": 0}, "type"),
        ({"version": "1", "id": "s", "createdAt": 0}, "version"),
        ({"version": 1, "id": "s", "createdAt": 1.5}, "createdAt"),
        ({"version": 1, "createdAt": 0}, "id: Field required"),
        ({"version": 1, "id": "s", "createdAt": 0, "cwd": None}, "cwd"),
        ({"version": 1, "id": "s", "createdAt": 0, "parentSession": 3}, "parentSession"),
        ("header", "(root)"),
        ({"version": 1, "id": "s", "createdAt": float("nan")}, "not a JSON value"),
    ],
)
def test_rejects_malformed_headers(raw: Any, fragment: str) -> None:
    with pytest.raises(HarnessError, match="malformed session header") as caught:
        parse_session_header(raw)
    assert caught.value.code == "MALFORMED"
    assert fragment in str(caught.value)


def test_header_line_requires_the_session_type_and_valid_json() -> None:
    assert parse_session_header_line('{"type":"session","version":1,"id":"a","createdAt":3}') == {
        "version": 1,
        "id": "a",
        "createdAt": 3,
    }
    for line in ('{"version":1,"id":"a","createdAt":3}', "[1]", '{"type":"turn/start"}'):
        with pytest.raises(HarnessError, match=r'must be \{"type":"session"'):
            parse_session_header_line(line)
    with pytest.raises(HarnessError, match="malformed session header: not valid JSON"):
        parse_session_header_line("{not json")


def test_header_line_has_the_exact_key_order_and_omits_absent_keys() -> None:
    assert (
        header_line({"version": 1, "id": "s", "createdAt": 0})
        == '{"type":"session","version":1,"id":"s","createdAt":0}'
    )
    full: Any = {"parentSession": "p", "cwd": "/wörk", "createdAt": 7, "id": "s", "version": 1}
    assert (
        header_line(full) == '{"type":"session","version":1,"id":"s","createdAt":7,"cwd":"/wörk","parentSession":"p"}'
    )


# ----------------------------------------------------------- interop acceptance
def _conformance_logs() -> list[Path]:
    assert CONFORMANCE.is_dir(), f"conformance folder missing: {CONFORMANCE} (restore it from the repository)"
    logs = sorted(CONFORMANCE.glob("*/session.jsonl")) + sorted(CONFORMANCE.glob("*/session.golden.jsonl"))
    assert logs, f"no session logs under {CONFORMANCE}"
    return logs


def test_every_reference_log_line_parses_and_re_serializes_to_an_equal_json_value() -> None:
    """Interop: each line of every recorded session.jsonl / session.golden.jsonl round-trips."""
    events_seen = 0
    kinds: set[str] = set()
    for path in _conformance_logs():
        lines = path.read_text(encoding="utf-8").splitlines()
        header = parse_session_header_line(lines[0])
        assert json.loads(header_line(header)) == json.loads(lines[0]), path
        assert header_line(header) == lines[0], path
        events = [parse_session_event_line(line) for line in lines[1:]]
        for index, (line, parsed) in enumerate(zip(lines[1:], events, strict=True)):
            assert parsed["seq"] == index, (path, index)
            assert json.loads(session_event_line(parsed)) == json.loads(line), (path, index)
            assert session_event_line(parsed) == line, (path, index)
            kinds.add(parsed["type"])
        events_seen += len(events)
        replayed = Session(header["id"], events, header)
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
    header: SessionHeader = {
        "version": 1,
        "id": "wire",
        "createdAt": 11,
        "cwd": "/w",
        "parentSession": "root",
    }
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


def _parse_or_code(raw: Any) -> tuple[Any, str | None]:
    try:
        return parse_session_event(raw), None
    except HarnessError as error:
        return None, error.code


@settings(deadline=None)
@given(EVENT_TYPES, fuzz)
def test_property_parse_either_accepts_or_raises_malformed(kind: str, data: Any) -> None:
    """Any JSON input parses to an equal copy or raises HarnessError(MALFORMED), never anything else."""
    raw = event(kind, 0, data)
    parsed, code = _parse_or_code(raw)
    if code is None:
        assert parsed == raw
        assert json.loads(session_event_line(parsed)) == raw
    else:
        assert code == "MALFORMED"
