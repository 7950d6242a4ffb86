"""The snapshot normalizers (SPEC §16.4 ``snapshot-normalize.spec``), plus JSON-fidelity properties."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.examples.acp.normalize import (
    ScrubContext,
    StdoutPurityError,
    json_lines,
    normalize_session_log,
    normalize_stdout,
    scrub,
)

CWD = "/tmp/acp-snap-cwd-AbC123"
SID = "0e5b2fc1-d220-4a81-b48b-939c14dea057"
CONTEXT = ScrubContext(cwd=CWD, session_ids=[SID])


def lines(*values: object) -> str:
    return "".join(json.dumps(value) + "\n" for value in values)


# ------------------------------------------------------------------ normalizeStdout
def test_rewrites_json_rpc_ids_to_a_stable_first_seen_sequence() -> None:
    """normalizeStdout — rewrites JSON-RPC ids to a stable first-seen sequence"""
    raw = lines(
        {"jsonrpc": "2.0", "id": 17, "result": {}},
        {"jsonrpc": "2.0", "id": "abc", "result": {}},
        {"jsonrpc": "2.0", "id": 17, "error": {"code": 1, "message": "again"}},
        {"jsonrpc": "2.0", "id": 4, "result": {}},
    )
    ids = [frame["id"] for frame in json_lines(normalize_stdout(raw, CONTEXT))]
    assert ids == [1, 2, 1, 3]


def test_scrubs_the_cwd_and_session_id_anywhere_they_appear() -> None:
    """normalizeStdout — scrubs the cwd and session id anywhere they appear"""
    raw = lines(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": SID,
                "update": {"_meta": {"terminal_info": {"cwd": f"{CWD}/sub", "note": [f"in {CWD} for {SID}"]}}},
            },
        }
    )
    (frame,) = json_lines(normalize_stdout(raw, CONTEXT))
    assert frame["params"]["sessionId"] == "{{sessionId}}"
    assert frame["params"]["update"]["_meta"]["terminal_info"] == {
        "cwd": "{{cwd}}/sub",
        "note": ["in {{cwd}} for {{sessionId}}"],
    }


def test_scrubs_a_stray_uuid_not_in_the_known_list() -> None:
    """normalizeStdout — scrubs a stray UUID not in the known list"""
    raw = lines({"jsonrpc": "2.0", "id": 1, "result": {"other": "id 9F0C1A2B-3D4E-4F50-8A6B-7C8D9E0F1A2B here"}})
    (frame,) = json_lines(normalize_stdout(raw, CONTEXT))
    assert frame["result"]["other"] == "id {{sessionId}} here"


def test_leaves_notification_frames_without_an_id_untouched_in_id_space() -> None:
    """normalizeStdout — leaves notification frames without an id untouched in id-space"""
    raw = lines(
        {"jsonrpc": "2.0", "method": "session/update", "params": {"update": {}}},
        {"jsonrpc": "2.0", "id": 99, "result": {}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
    )
    frames = json_lines(normalize_stdout(raw, CONTEXT))
    assert "id" not in frames[0]
    assert frames[1]["id"] == 1  # the notification consumed no number
    assert frames[2]["id"] is None


def test_throws_on_a_non_json_stdout_line_the_purity_check() -> None:
    """normalizeStdout — throws on a non-JSON stdout line (the purity check)"""
    raw = lines({"jsonrpc": "2.0", "id": 1, "result": {}}) + "INFO booting...\n"
    with pytest.raises(StdoutPurityError, match="line 2"):
        normalize_stdout(raw, CONTEXT)


def test_ignores_blank_lines() -> None:
    """normalizeStdout — ignores blank lines"""
    raw = "\n" + lines({"jsonrpc": "2.0", "id": 5, "result": {}}) + "   \n\n"
    assert normalize_stdout(raw, CONTEXT) == '{"jsonrpc":"2.0","id":1,"result":{}}\n'
    assert normalize_stdout("\n \n", CONTEXT) == ""


# -------------------------------------------------------------- normalizeSessionLog
HEADER = {"type": "session", "version": 1, "id": SID, "createdAt": 1781834679270, "cwd": CWD}


def test_zeroes_the_header_created_at() -> None:
    """normalizeSessionLog — zeroes the header createdAt"""
    (header,) = json_lines(normalize_session_log(lines(HEADER), CONTEXT))
    assert header == {"type": "session", "version": 1, "id": "{{sessionId}}", "createdAt": 0, "cwd": "{{cwd}}"}
    assert list(header) == ["type", "version", "id", "createdAt", "cwd"]


def test_zeroes_each_event_time_but_keeps_seq() -> None:
    """normalizeSessionLog — zeroes each event time but keeps seq"""
    raw = lines(
        HEADER,
        {"type": "turn/start", "seq": 0, "time": 1781834679273, "data": {"turn": 1}},
        {"type": "step/start", "seq": 7, "time": 1781834679280, "data": {"turn": 1, "step": 1}},
    )
    _, first, second = json_lines(normalize_session_log(raw, CONTEXT))
    assert (first["seq"], first["time"]) == (0, 0)
    assert (second["seq"], second["time"]) == (7, 0)
    assert list(second) == ["type", "seq", "time", "data"]


def test_scrubs_cwd_and_session_id_deep_inside_event_data() -> None:
    """normalizeSessionLog — scrubs cwd and session id deep inside event data"""
    event = {
        "type": "tool/result",
        "seq": 3,
        "time": 5,
        "data": {"content": [{"type": "text", "text": f"wrote {CWD}/proof.txt for session {SID}\n"}]},
    }
    _, result = json_lines(normalize_session_log(lines(HEADER, event), CONTEXT))
    assert result["data"]["content"][0]["text"] == "wrote {{cwd}}/proof.txt for session {{sessionId}}\n"


def test_a_record_without_time_is_kept_as_it_is() -> None:
    """(port) only the header createdAt and present time fields are zeroed"""
    record = {"type": "custom/marker", "seq": 4, "data": {"note": "n"}}
    _, kept = json_lines(normalize_session_log(lines(HEADER, record), CONTEXT))
    assert kept == record


def test_scrubs_the_session_id_in_the_header() -> None:
    """normalizeSessionLog — scrubs the session id in the header"""
    text = normalize_session_log(lines(HEADER), ScrubContext())  # even when no id is known: it is a UUID
    assert json_lines(text)[0]["id"] == "{{sessionId}}"
    assert text.endswith("}\n")


# ------------------------------------------------------------------------- fidelity
def test_output_is_compact_utf8_json_with_a_trailing_newline() -> None:
    """(port) the normalized text is compact JSON that keeps non-ASCII text as is"""
    raw = lines({"jsonrpc": "2.0", "id": "x", "result": {"text": "héllo ✓"}})
    assert normalize_stdout(raw, CONTEXT) == '{"jsonrpc":"2.0","id":1,"result":{"text":"héllo ✓"}}\n'


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(JSON)
def test_scrub_without_known_values_keeps_uuid_free_json_as_is(value: object) -> None:
    """(port) scrubbing changes nothing but the cwd, session ids and UUIDs"""
    assert scrub(value, ScrubContext()) == value


@given(st.lists(st.fixed_dictionaries({"jsonrpc": st.just("2.0"), "id": st.integers(0, 5) | st.none()}), max_size=8))
def test_id_ranks_are_dense_and_first_seen(frames: list[dict[str, object]]) -> None:
    """(port) request ids map onto 1..n in order of first appearance, null ids stay null"""
    normalized = json_lines(normalize_stdout(lines(*frames), CONTEXT))
    ranks = [frame["id"] for frame in normalized if frame["id"] is not None]
    seen: list[int] = []
    for rank in ranks:
        if rank not in seen:
            assert rank == len(seen) + 1
            seen.append(rank)
    originals = [frame["id"] for frame in frames]
    assert [original is None for original in originals] == [frame["id"] is None for frame in normalized]
