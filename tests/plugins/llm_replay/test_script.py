"""SPEC §12: parse_session_log, derive_replay_script, load_replay_script, entry checks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.core.errors import HarnessError
from dsh.core.llm import ErrorFinish, StreamChunk, encode, to_json
from dsh.core.session import AssistantChunkEvent, TurnStartEvent, UntypedEvent
from dsh.plugins.llm_replay import (
    OVERRIDE_FILE_NAME,
    ChunksEntry,
    HangEntry,
    ThrowEntry,
    derive_replay_script,
    load_replay_script,
    parse_replay_entry,
    parse_session_log,
)
from tests.plugins.llm_replay.helpers import (
    HEADER,
    answer,
    chunk_event,
    delta,
    dumps,
    entry,
    event,
    finish,
    log_text,
    recorded_call,
    start,
    turn_end,
    turn_start,
    typed,
    write_json,
    write_log,
)

# ---------------------------------------------------------------- parse_session_log


def test_skips_the_header_line_and_parses_each_event() -> None:
    """skips the header line and parses each event"""
    events = [turn_start(1), chunk_event(1, 1, finish())]
    parsed = parse_session_log(log_text(events))
    assert [item.type for item in parsed] == ["turn/start", "assistant/chunk"]
    assert type(parsed[0]) is TurnStartEvent
    assert parsed[0] == typed([{**events[0], "seq": 0}])[0]
    assert type(parsed[1]) is AssistantChunkEvent
    assert parsed[1].data.chunk == finish()


def test_ignores_blank_lines() -> None:
    """ignores blank lines"""
    text = "\n  \n" + dumps(HEADER) + "\n\n\t\n" + dumps(turn_start(1)) + "\n   \n"
    parsed = parse_session_log(text)
    assert [item.type for item in parsed] == ["turn/start"]


def test_parse_session_log_of_an_empty_text_is_empty() -> None:
    """Extra: a text with no lines (or only a header) has no events."""
    assert parse_session_log("") == []
    assert parse_session_log(dumps(HEADER) + "\n") == []


def test_parse_session_log_keeps_events_of_unknown_types() -> None:
    """Extra: an event type this version does not define is kept as an UntypedEvent"""
    (parsed,) = parse_session_log(log_text([event("plugin/custom", "not even an object")]))
    assert parsed == UntypedEvent(type="plugin/custom", seq=0, time=1000, data="not even an object")


def test_parse_session_log_names_the_line_of_malformed_json() -> None:
    """Extra (SPEC §12: malformed lines raise): the error names the origin and the file line."""
    text = dumps(HEADER) + "\n\n" + '{"type":"turn/start"' + "\n"
    with pytest.raises(
        HarnessError, match=r"^llm-replay: rec\.jsonl line 3: malformed session event: not valid JSON"
    ) as caught:
        parse_session_log(text, "rec.jsonl")
    assert caught.value.code == "MALFORMED"
    assert caught.value.message.endswith("; re-record the scenario")
    assert isinstance(caught.value.__cause__, HarnessError)


def test_parse_session_log_rejects_a_line_that_is_not_an_object() -> None:
    """Extra: an event line must be a JSON object."""
    with pytest.raises(HarnessError, match=r"^llm-replay: session log line 2: malformed session event") as caught:
        parse_session_log(dumps(HEADER) + "\n[1]\n")
    assert caught.value.code == "MALFORMED"


@pytest.mark.parametrize(
    ("data", "where"),
    [
        ("not an object", "$.data"),
        ({"turn": "1", "step": 1, "chunk": finish()}, "$.data.turn"),
        ({"turn": 1, "step": True, "chunk": finish()}, "$.data.step"),
        ({"turn": 1, "step": 1}, "chunk"),
    ],
)
def test_parse_session_log_rejects_a_malformed_assistant_chunk_event(data: object, where: str) -> None:
    """Extra: turn and step must be integers and the chunk present; the line and the field are named."""
    text = log_text([turn_start(1), event("assistant/chunk", data)])
    with pytest.raises(HarnessError) as caught:
        parse_session_log(text)
    assert caught.value.code == "MALFORMED"
    assert caught.value.message.startswith('llm-replay: session log line 3: malformed "assistant/chunk" event')
    assert where in caught.value.message


def test_parse_session_log_rejects_a_chunk_outside_the_stream_chunk_union() -> None:
    """Extra: a recorded chunk is checked against the closed StreamChunk union."""
    text = log_text([event("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "rogue"}})])
    with pytest.raises(HarnessError) as caught:
        parse_session_log(text)
    assert caught.value.code == "MALFORMED"
    assert caught.value.message.startswith('llm-replay: session log line 2: malformed "assistant/chunk" event')
    assert "$.data.chunk" in caught.value.message
    assert isinstance(caught.value.__cause__, HarnessError)


# -------------------------------------------------------------- derive_replay_script


def test_groups_assistant_chunk_by_turn_step_into_one_entry_per_stream_call() -> None:
    """groups assistant/chunk by (turn, step) into one entry per stream() call"""
    chunks = answer("hello")
    script = derive_replay_script(typed(recorded_call(1, 1, chunks)))
    assert script == [entry(chunks)]


def test_produces_one_entry_per_distinct_turn_step_in_log_order() -> None:
    """produces one entry per distinct (turn, step), in log order"""
    first, second, third = answer("one"), answer("two"), answer("three")
    events = [*recorded_call(1, 1, first), *recorded_call(1, 2, second), *recorded_call(1, 3, third)]
    assert derive_replay_script(typed(events)) == [entry(first), entry(second), entry(third)]


def test_separates_calls_across_turns_too() -> None:
    """separates calls across turns too"""
    first, second = answer("turn one"), answer("turn two")
    events = [
        turn_start(1),
        *recorded_call(1, 1, first),
        turn_end(1),
        turn_start(2),
        *recorded_call(2, 1, second),
        turn_end(2),
    ]
    assert derive_replay_script(typed(events)) == [entry(first), entry(second)]


def test_separates_consecutive_chunk_events_when_only_the_key_changes() -> None:
    """Extra: a key change alone (no step/end between) starts a new model call."""
    events = [chunk_event(1, 1, finish()), chunk_event(1, 2, finish()), chunk_event(1, 1, finish())]
    assert derive_replay_script(typed(events)) == [entry([finish()])] * 3


def test_ignores_non_assistant_chunk_events() -> None:
    """ignores non-assistant/chunk events"""
    chunks = answer("x")
    events = [
        event("user/message", {"content": [], "source": {"kind": "user"}}),
        *recorded_call(1, 1, chunks),
        event("assistant/message", {"turn": 1, "step": 1, "content": []}),
        event("usage", {"turn": 1, "step": 1, "usage": {"inputTokens": 1, "outputTokens": 1}}),
        event("plugin/custom", "not even an object"),
    ]
    assert derive_replay_script(typed(events)) == [entry(chunks)]


def test_returns_an_empty_script_for_a_log_with_no_assistant_chunk_events() -> None:
    """returns an empty script for a log with no assistant/chunk events"""
    assert derive_replay_script(typed([turn_start(1), turn_end(1)])) == []
    assert derive_replay_script([]) == []


def test_keeps_a_finish_error_chunk_in_the_derived_entry_replays_naturally() -> None:
    """keeps a finish-error chunk in the derived entry (replays naturally)"""
    chunks: list[StreamChunk] = [start(), delta("par"), finish(ErrorFinish(message="boom", code="SERVER"))]
    assert derive_replay_script(typed(recorded_call(1, 1, chunks))) == [entry(chunks)]


def test_throws_on_a_group_that_lacks_a_terminal_finish_chunk_a_thrown_stream() -> None:
    """throws on a group that lacks a terminal finish chunk (a thrown stream)"""
    events = typed(recorded_call(1, 1, [start(), delta("cut off")]))
    with pytest.raises(HarnessError) as caught:
        derive_replay_script(events)
    assert "finish chunk" in caught.value.message
    assert OVERRIDE_FILE_NAME == "replay.override.json"
    assert "replay.override.json" in caught.value.message
    assert caught.value.code == "REPLAY_NEEDS_OVERRIDE"


def test_names_the_offending_turn_step_when_a_group_is_incomplete() -> None:
    """names the offending (turn, step) when a group is incomplete"""
    events = [*recorded_call(2, 2, answer("fine")), *recorded_call(2, 3, [start()]), *recorded_call(3, 1, answer("x"))]
    with pytest.raises(HarnessError) as caught:
        derive_replay_script(typed(events))
    assert caught.value.message == (
        "llm-replay: model call 2/3 ended without a finish chunk (a thrown stream); "
        "this scenario needs a replay.override.json sidecar"
    )


def test_checks_the_last_group_of_the_log_too() -> None:
    """Extra: the final group must end with a finish chunk as well."""
    with pytest.raises(HarnessError, match="model call 4/1 ended without a finish chunk"):
        derive_replay_script(typed([*recorded_call(1, 1, answer("ok")), chunk_event(4, 1, start())]))


# ----------------------------------------------------------------- load_replay_script


def test_derives_from_the_session_jsonl_when_no_override_is_present(tmp_path: Path) -> None:
    """derives from the session JSONL when no override is present"""
    chunks = answer("from the log")
    file = write_log(tmp_path / "session.jsonl", recorded_call(1, 1, chunks))
    assert load_replay_script(file) == [entry(chunks)]
    assert load_replay_script(str(file), None) == [entry(chunks)]


def test_uses_the_sidecar_override_when_present_ignoring_the_jsonl(tmp_path: Path) -> None:
    """uses the sidecar override when present, ignoring the JSONL"""
    file = write_log(tmp_path / "session.jsonl", recorded_call(1, 1, [start()]))  # would not even derive
    override = [
        entry(answer("sidecar")),
        ThrowEntry(chunks=(), message="boom", code="SERVER", status=503),
        HangEntry(),
    ]
    sidecar = write_json(tmp_path / "replay.override.json", override)
    assert load_replay_script(file, sidecar) == override


def test_the_override_replaces_the_script_even_when_the_fixture_is_missing(tmp_path: Path) -> None:
    """Extra (SPEC §17.30): a present override is the whole script; the log is never read."""
    sidecar = write_json(tmp_path / "replay.override.json", [{"kind": "hang"}])
    assert load_replay_script(tmp_path / "absent.jsonl", sidecar) == [HangEntry()]


def test_falls_back_to_the_jsonl_when_the_override_path_is_set_but_absent(tmp_path: Path) -> None:
    """falls back to the JSONL when the override path is set but absent"""
    chunks = answer("log")
    file = write_log(tmp_path / "session.jsonl", recorded_call(1, 1, chunks))
    assert load_replay_script(file, tmp_path / "replay.override.json") == [entry(chunks)]
    assert load_replay_script(file, "") == [entry(chunks)]


def test_fails_loud_when_the_fixture_is_missing(tmp_path: Path) -> None:
    """fails loud when the fixture is missing"""
    missing = tmp_path / "nowhere" / "session.jsonl"
    with pytest.raises(HarnessError) as caught:
        load_replay_script(missing)
    assert caught.value.message == (
        f"llm-replay: fixture not found: {missing} — run the snapshot recorder first (DSH_SNAPSHOT=record)"
    )
    assert caught.value.code == "REPLAY_FIXTURE_NOT_FOUND"


def test_throws_when_the_override_is_not_a_json_array(tmp_path: Path) -> None:
    """throws when the override is not a JSON array"""
    file = write_log(tmp_path / "session.jsonl", [])
    sidecar = write_json(tmp_path / "replay.override.json", {"kind": "hang"})
    with pytest.raises(HarnessError) as caught:
        load_replay_script(file, sidecar)
    assert caught.value.message == f"llm-replay: override is not a JSON array: {sidecar}"
    assert caught.value.code == "MALFORMED"


def test_load_rejects_an_override_that_is_not_json(tmp_path: Path) -> None:
    """Extra: a sidecar that does not decode names its path and the fix."""
    sidecar = tmp_path / "replay.override.json"
    sidecar.write_text("[{", encoding="utf-8")
    with pytest.raises(HarnessError, match=r"override .*replay\.override\.json is not valid JSON .*fix or delete it"):
        load_replay_script(tmp_path / "session.jsonl", sidecar)


def test_load_reports_an_unreadable_override(tmp_path: Path) -> None:
    """Extra: an override path that exists but cannot be read fails with REPLAY_IO."""
    with pytest.raises(HarnessError, match=r"^llm-replay: cannot read ") as caught:
        load_replay_script(tmp_path / "session.jsonl", tmp_path)
    assert caught.value.code == "REPLAY_IO"


def test_load_names_the_offending_override_entry(tmp_path: Path) -> None:
    """Extra: a malformed sidecar entry is reported with the file, its index and the bad field."""
    sidecar = write_json(tmp_path / "replay.override.json", [{"kind": "hang"}, {"kind": "chunks", "chunks": 3}])
    with pytest.raises(HarnessError) as caught:
        load_replay_script(tmp_path / "session.jsonl", sidecar)
    assert caught.value.message == (
        f"llm-replay: override {sidecar} [1]: malformed replay entry: Expected `array`, got `int` - at `$.chunks`"
    )
    assert caught.value.code == "MALFORMED"


def test_load_names_the_fixture_when_the_log_is_malformed(tmp_path: Path) -> None:
    """Extra: a broken line of the fixture is reported with the fixture's path."""
    file = tmp_path / "session.jsonl"
    file.write_text(dumps(HEADER) + "\nnot json\n", encoding="utf-8")
    with pytest.raises(HarnessError, match=rf"^llm-replay: {file} line 2: malformed session event: not valid JSON"):
        load_replay_script(file)


def test_load_reports_an_unreadable_fixture(tmp_path: Path) -> None:
    """Extra: a path that exists but cannot be read (a directory, bad UTF-8) fails with REPLAY_IO."""
    with pytest.raises(HarnessError, match=r"^llm-replay: cannot read .*readable UTF-8 file\)$") as caught:
        load_replay_script(tmp_path)
    assert caught.value.code == "REPLAY_IO"
    assert isinstance(caught.value.__cause__, OSError)
    binary = tmp_path / "session.jsonl"
    binary.write_bytes(b"\xff\xfe\n")
    with pytest.raises(HarnessError, match="cannot read") as caught:
        load_replay_script(binary)
    assert isinstance(caught.value.__cause__, UnicodeDecodeError)


# ------------------------------------------------------------------ parse_replay_entry


def test_parse_replay_entry_accepts_every_kind_and_ignores_other_keys() -> None:
    """Extra: the three kinds of the closed union; keys an entry does not define are ignored."""
    chunks = answer("a")
    json_chunks: Any = [dumps_value(chunk) for chunk in chunks]
    assert parse_replay_entry({"kind": "chunks", "chunks": json_chunks}) == ChunksEntry(chunks=tuple(chunks))
    assert parse_replay_entry({"kind": "hang", "note": "x"}) == HangEntry()
    thrown = {"kind": "throw", "chunks": json_chunks, "message": "m", "code": "C"}
    parsed = parse_replay_entry({**thrown, "extra": 1})
    assert parsed == ThrowEntry(chunks=tuple(chunks), message="m", code="C")
    assert b"status" not in encode(parsed)
    assert encode(parsed) == encode(thrown)


def dumps_value(chunk: StreamChunk) -> Any:
    """``chunk`` as decoded JSON."""
    return to_json(chunk)


def test_parse_replay_entry_raises_assert_never_for_an_unknown_kind() -> None:
    """Extra: a kind outside the closed union goes through assert_never, with a note naming the fix."""
    with pytest.raises(HarnessError) as caught:
        parse_replay_entry({"kind": "bogus"}, "sidecar [0]")
    assert caught.value.message == 'unreachable variant in llm-replay replay entry: {"kind":"bogus"}'
    assert caught.value.code == "UNREACHABLE"
    assert caught.value.__notes__ == ['sidecar [0]: "kind" must be one of chunks, throw, hang']
    with pytest.raises(HarnessError, match="unreachable variant in llm-replay replay entry"):
        parse_replay_entry({"chunks": []})


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("hang", "Expected `object`, got `str` - at `$`"),
        ({"kind": "chunks"}, "Object missing required field `chunks` - at `$`"),
        ({"kind": "throw", "chunks": [], "code": "C"}, "Object missing required field `message` - at `$`"),
        ({"kind": "throw", "chunks": [], "message": "m", "code": 5}, "Expected `str`, got `int` - at `$.code`"),
        (
            {"kind": "throw", "chunks": [], "message": "m", "code": "C", "status": None},
            "Expected `int`, got `null` - at `$.status`",
        ),
        (
            {"kind": "throw", "chunks": [], "message": "m", "code": "C", "status": True},
            "Expected `int`, got `bool` - at `$.status`",
        ),
    ],
)
def test_parse_replay_entry_rejects_malformed_entries(value: object, problem: str) -> None:
    """Extra: every malformed shape names the entry and what is wrong (code MALFORMED)."""
    with pytest.raises(HarnessError) as caught:
        parse_replay_entry(value)
    assert caught.value.message == f"llm-replay: replay entry: malformed replay entry: {problem}"
    assert caught.value.code == "MALFORMED"


def test_parse_replay_entry_checks_each_chunk() -> None:
    """Extra: every chunk of an entry is checked; the error names its index."""
    with pytest.raises(HarnessError) as caught:
        parse_replay_entry(
            {"kind": "chunks", "chunks": [dumps_value(finish()), {"type": "text-delta", "index": 0}]}, "e"
        )
    assert caught.value.message.startswith("llm-replay: e: malformed replay entry: ")
    assert "$.chunks[1]" in caught.value.message
    assert caught.value.code == "MALFORMED"


def test_a_value_that_is_not_json_is_malformed() -> None:
    """Extra: a value JSON has no form for is refused as malformed."""
    with pytest.raises(HarnessError, match="llm-replay: replay entry: malformed replay entry") as caught:
        parse_replay_entry({1, 2})
    assert caught.value.code == "MALFORMED"


def test_entries_are_immutable() -> None:
    """Extra: an entry is a frozen value (shared by every replay of the script)."""
    thrown = ThrowEntry(chunks=(), message="m", code="C")
    with pytest.raises(AttributeError):
        thrown.message = "other"  # type: ignore[misc]
