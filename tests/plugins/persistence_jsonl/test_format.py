"""The JSONL on-disk format: segment encoding, buckets and scan_log (SPEC §4b)."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.core.errors import HarnessError
from dsh.core.llm import to_json
from dsh.core.persistence import PersistenceError
from dsh.core.session import SessionEvent, header_line, session_event_line
from dsh.plugins.persistence_jsonl import NO_CWD_BUCKET, bucket_name, encode_segment, log_path, scan_log
from dsh.plugins.persistence_jsonl.scan import intact_bytes
from tests.core.persistence.helpers import event, meta, one_turn_log, seqs, step, turn_end, turn_start

SAFE = re.compile(r"[A-Za-z0-9._~-]*")


def decode_segment(encoded: str) -> str:
    """The inverse of encode_segment (test oracle for injectivity)."""
    if encoded == "~002E":
        return "."
    if encoded == "~002E~002E":
        return ".."
    return re.sub(r"~([0-9A-F]{4})", lambda match: chr(int(match.group(1), 16)), encoded)


def units_to_text(units: list[int]) -> str:
    """A Python string holding exactly these UTF-16 code units (surrogates as code points)."""
    return "".join(chr(unit) for unit in units)


def line_of(item: SessionEvent | dict[str, Any]) -> bytes:
    """The log line of an event (or of a plain JSON value that is none)."""
    if isinstance(item, dict):
        return json.dumps(item, separators=(",", ":")).encode() + b"\n"
    return session_event_line(item).encode() + b"\n"


def raw_log(*events: SessionEvent | dict[str, Any], header: bytes | None = None, tail: bytes = b"") -> bytes:
    first = header if header is not None else header_line(meta("s")).encode()
    return first + b"\n" + b"".join(line_of(item) for item in events) + tail


# --- describe "SessionPersistenceJsonl: format helpers"
def test_encode_segment_neutralizes_traversal_separators_and_absolute_paths() -> None:
    """encodeSegment neutralizes traversal, separators, and absolute paths"""
    assert encode_segment("..") == "~002E~002E"
    assert encode_segment(".") == "~002E"
    assert encode_segment("a/b") == "a~002Fb"
    assert encode_segment("/etc/passwd") == "~002Fetc~002Fpasswd"
    assert encode_segment("\0") == "~0000"
    assert encode_segment("plain-ID_1.2") == "plain-ID_1.2"
    assert encode_segment("a~b") == "a~007Eb"
    assert encode_segment("...") == "..."
    assert encode_segment("a\\b") == "a~005Cb"
    assert encode_segment("é") == "~00E9"
    assert encode_segment("😀") == "~D83D~DE00"


@given(st.lists(st.integers(min_value=0, max_value=0xFFFF), min_size=1, max_size=12))
def test_encode_segment_is_injective_over_utf_16_incl_lone_surrogates(units: list[int]) -> None:
    """encodeSegment is injective over UTF-16, incl. lone surrogates"""
    raw = units_to_text(units)
    encoded = encode_segment(raw)
    assert SAFE.fullmatch(encoded)
    assert encoded not in (".", "..")
    assert "/" not in encoded
    assert decode_segment(encoded) == raw


def test_encode_segment_treats_a_lone_surrogate_as_its_code_unit() -> None:
    """(lone surrogates and astral characters encode by UTF-16 code unit)"""
    assert encode_segment("\ud800") == "~D800"
    assert encode_segment("a\udfffb") == "a~DFFFb"
    assert encode_segment("\ud83d\ude00") == encode_segment("😀")


def test_encode_segment_rejects_an_empty_id() -> None:
    """encodeSegment rejects an empty id"""
    with pytest.raises(PersistenceError, match=r"cannot encode an empty path segment") as raised:
        encode_segment("")
    assert raised.value.code == "INVALID_ID"


def test_buckets_are_named_by_the_sha256_of_the_utf8_cwd() -> None:
    """(cwd-<first 12 hex of sha256(utf8(cwd))>, _no-cwd without a cwd)"""
    assert bucket_name(None) == NO_CWD_BUCKET == "_no-cwd"
    assert bucket_name("/w") == "cwd-" + hashlib.sha256(b"/w").hexdigest()[:12]
    assert bucket_name("/wörk") == "cwd-" + hashlib.sha256("/wörk".encode()).hexdigest()[:12]
    assert bucket_name("/x\ud800") == "cwd-" + hashlib.sha256("/x\ufffd".encode()).hexdigest()[:12]
    assert log_path("/root", "/w", "../x") == f"/root/{bucket_name('/w')}/..~002Fx.jsonl"
    assert log_path("/root", None, "s") == "/root/_no-cwd/s.jsonl"


def test_the_header_line_keeps_the_reference_key_order() -> None:
    """(header line: type, version, id, createdAt, cwd?, parentSession?)"""
    line = header_line(meta("s", "/w", parentSession="p"))
    assert line == '{"type":"session","version":1,"id":"s","createdAt":1000,"cwd":"/w","parentSession":"p"}'


# --- describe "SessionPersistenceJsonl: scanLog unit"
def test_rejects_a_header_less_empty_log() -> None:
    """rejects a header-less / empty log"""
    for data in (b"", header_line(meta("s")).encode()):
        with pytest.raises(PersistenceError, match=r"empty or header-less session log") as raised:
            scan_log(data)
        assert raised.value.code == "CORRUPT_LOG"


def test_rejects_a_corrupt_header_line() -> None:
    """rejects a corrupt header line"""
    for header in (b'{"type":"session","version":1,', b"\xff\xfe", b""):
        with pytest.raises(PersistenceError, match=r"header line is not valid JSON"):
            scan_log(raw_log(header=header))


def test_rejects_a_non_session_first_line() -> None:
    """rejects a non-session first line"""
    first_lines = [
        session_event_line(event("turn/start", 0, turn_start(1))).encode(),
        b"[1,2]",
        b'{"type":"session","version":"1","id":"s","createdAt":0}',
        b'{"type":"session","version":1,"createdAt":0}',
        b'{"type":"session","version":1,"id":"s","createdAt":0,"cwd":null}',
    ]
    for header in first_lines:
        with pytest.raises(PersistenceError, match=r"session header") as raised:
            scan_log(raw_log(header=header))
        assert raised.value.code == "CORRUPT_LOG"


def test_a_seq_gap_after_the_last_turn_end_bounds_the_preserved_tail_torn_fragment_tolerated() -> None:
    """a seq gap after the last turn/end bounds the preserved tail (torn fragment tolerated)"""
    data = raw_log(event("turn/start", 0, turn_start(1)), event("step/start", 2, step(1, 1)), tail=b'{"ty')
    scan = scan_log(data)
    assert seqs(scan.events) == [0]
    assert scan.committed_bytes == len(raw_log(event("turn/start", 0, turn_start(1))))


def test_rejects_a_seq_gap_before_a_later_committed_turn_end_committed_data_damaged() -> None:
    """rejects a seq gap BEFORE a later committed turn/end (committed data damaged)"""
    data = raw_log(event("turn/start", 0, turn_start(1)), event("turn/end", 2, turn_end(1)))
    with pytest.raises(
        PersistenceError, match=r"seq gap in committed region at line 3 \(expected 1, got 2\)"
    ) as raised:
        scan_log(data)
    assert raised.value.code == "CORRUPT_LOG"


def test_rejects_a_corrupt_line_before_a_later_committed_turn_end_committed_data_damaged() -> None:
    """rejects a corrupt line BEFORE a later committed turn/end (committed data damaged)"""
    log = one_turn_log()
    data = raw_log(log[0]) + b'{"type":"user/message",oops}\n' + b"".join(line_of(item) for item in log[2:])
    with pytest.raises(PersistenceError, match=r"unparsable committed event at line 3") as raised:
        scan_log(data)
    assert raised.value.__cause__ is not None


def test_a_shape_violation_in_the_committed_region_counts_as_unparsable() -> None:
    """(a line that is JSON but not a valid event is a hole too)"""
    log = one_turn_log()
    broken = {
        "type": "user/message",
        "seq": 1,
        "time": 0,
        "data": {"content": "not a list", "source": {"kind": "user"}},
    }
    data = raw_log(log[0], broken, *log[2:])
    with pytest.raises(PersistenceError, match=r"unparsable committed event at line 3"):
        scan_log(data)


def test_a_header_only_log_no_event_lines_at_all_preserves_nothing_committed_bytes_is_the_header() -> None:
    """a header-only log (no event lines at all) preserves nothing — committedBytes is the header"""
    data = raw_log()
    scan = scan_log(data)
    assert scan.meta == meta("s")
    assert scan.events == []
    assert scan.committed_bytes == len(data)
    torn = scan_log(data + b'{"type":')
    assert torn.events == []
    assert torn.committed_bytes == len(data)


def test_a_corrupt_line_after_the_last_turn_end_bounds_the_preserved_tail() -> None:
    """a corrupt line after the last turn/end bounds the preserved tail"""
    log = one_turn_log()
    data = raw_log(*log) + b"not json\n" + line_of(event("turn/start", 7, turn_start(2)))
    scan = scan_log(data)
    assert seqs(scan.events) == [0, 1, 2, 3, 4, 5]
    assert scan.committed_bytes == len(raw_log(*log))


def test_tolerates_a_seq_gap_after_a_turn_end_uncommitted_tail() -> None:
    """tolerates a seq gap AFTER a turn/end (uncommitted tail)"""
    data = raw_log(
        event("turn/start", 0, turn_start(1)),
        event("turn/end", 1, turn_end(1)),
        event("turn/start", 3, turn_start(2)),
    )
    assert seqs(scan_log(data).events) == [0, 1]


def test_byte_offsets_count_utf8_bytes_not_characters() -> None:
    """(committedBytes is a UTF-8 byte offset)"""
    wide = event(
        "user/message",
        0,
        {"content": [{"type": "text", "text": "héllo 😀 世界"}], "source": {"kind": "user"}},
    )
    data = raw_log(wide) + b"\xe4\xb8"
    scan = scan_log(data)
    assert scan.committed_bytes == len(data) - 2
    assert to_json(scan.events[0].data)["content"][0]["text"] == "héllo 😀 世界"
    assert session_event_line(scan.events[0]) == session_event_line(wide)


def wide_turn() -> list[SessionEvent]:
    """A balanced turn whose user message is not ASCII (2-, 3- and 4-byte UTF-8)."""
    log = one_turn_log()
    log[1] = event(
        "user/message", 1, {"content": [{"type": "text", "text": "héllo 😀 世界"}], "source": {"kind": "user"}}
    )
    return log


def test_committed_bytes_count_utf8_bytes_before_a_torn_line() -> None:
    """(the committed length of non-ASCII lines is their UTF-8 size, not their length in characters)"""
    committed = raw_log(*wide_turn())
    scan = scan_log(committed + b"not json\n" + line_of(event("turn/start", 7, turn_start(2))))
    assert seqs(scan.events) == list(range(6))
    assert scan.committed_bytes == len(committed)
    assert session_event_line(scan.events[1]) == session_event_line(wide_turn()[1])


def test_a_line_of_invalid_utf8_is_a_hole_of_its_own() -> None:
    """(bad bytes in one line spoil only that line: a torn tail after the last turn/end, else fatal)"""
    committed = raw_log(*wide_turn())
    scan = scan_log(committed + b"\xff\xfe garbage\n" + line_of(event("turn/start", 7, turn_start(2))))
    assert seqs(scan.events) == list(range(6))
    assert scan.committed_bytes == len(committed)
    assert to_json(scan.events[1].data)["content"][0]["text"] == "héllo 😀 世界"
    damaged = raw_log(*wide_turn()[:2]) + b"\xff\xfe\n" + b"".join(line_of(item) for item in wide_turn()[3:])
    with pytest.raises(PersistenceError, match=r"unparsable committed event at line 4") as raised:
        scan_log(damaged)
    assert isinstance(raised.value.__cause__, HarnessError)
    assert "not valid JSON" in str(raised.value.__cause__)


def test_a_turn_end_out_of_sequence_is_itself_committed_damage() -> None:
    """(a parseable turn/end with the wrong seq still marks the region before it as committed)"""
    data = raw_log(event("turn/start", 0, turn_start(1)), event("turn/end", 5, turn_end(1)))
    with pytest.raises(PersistenceError, match=r"seq gap in committed region at line 3 \(expected 1, got 5\)"):
        scan_log(data)


def test_intact_bytes_is_the_header_and_the_contiguous_valid_events_even_before_a_turn_end() -> None:
    log = one_turn_log()
    whole = raw_log(*log)
    assert intact_bytes(whole) == len(whole)
    assert intact_bytes(whole + b"torn") == len(whole)
    damaged = raw_log(*log[:2]) + b"garbage\n" + b"".join(line_of(item) for item in log[3:])
    assert intact_bytes(damaged) == len(raw_log(*log[:2]))
    for data in (b"", b"\xff\xfe\n", b"[1]\n"):
        with pytest.raises(PersistenceError, match=r"header"):
            intact_bytes(data)
