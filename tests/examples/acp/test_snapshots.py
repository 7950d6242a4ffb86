"""The ACP snapshot gate (SPEC §16.4 ``acp.snapshot``, §16.5): each scenario through the real process.

Every registered scenario boots ``examples/acp-agent/start.py`` in replay mode, is
driven over real stdio, and must reproduce its goldens: the normalized stdout frames
and, for a model turn, the normalized session log the run persisted, compared as JSON
values line by line.

``DSH_UPDATE_GOLDENS=1`` rewrites the goldens of the cases authored in this directory
from a replay run (the reference cases copied into ``reference/`` are never written). ``DSH_SNAPSHOT=record``
with ``DEEPSEEK_API_KEY`` re-records the recorded local cases against the real API
(their ``session.jsonl`` and goldens); other cases are skipped in record mode.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.examples.acp.harness import ScenarioRun, run_scenario
from tests.examples.acp.normalize import ScrubContext, json_lines, normalize_session_log, normalize_stdout
from tests.examples.acp.scenarios import (
    BY_NAME,
    LOCAL_ROOT,
    REFERENCE_ROOT,
    REQUIRED_FILES,
    SCENARIOS,
    Scenario,
    case_directories,
)


def snapshot_mode(scenario: Scenario, environ: Mapping[str, str]) -> str:
    """``"replay"`` or ``"record"`` for ``scenario`` under ``environ``; skips what record mode cannot do."""
    if environ.get("DSH_SNAPSHOT") != "record":
        return "replay"
    if not scenario.recorded or scenario.directory().parent != LOCAL_ROOT:
        pytest.skip("record mode re-records only the recorded cases authored here")
    if not environ.get("DEEPSEEK_API_KEY"):
        pytest.skip("record mode needs DEEPSEEK_API_KEY")
    return "record"


def update_goldens(
    directory: Path, scenario: Scenario, run: ScenarioRun, stdout: str, session: str | None, update: bool
) -> None:
    """After a record run, or when ``update`` is set: rewrite a local case's goldens (and, when
    recorded, its ``session.jsonl``) from ``run``. Reference cases are left alone."""
    if not (update or run.mode == "record") or directory.parent != LOCAL_ROOT:
        return
    if run.mode == "record" and run.session_log is not None:
        (directory / "session.jsonl").write_text(run.session_log, encoding="utf-8")
    (directory / "stdout.golden.jsonl").write_text(stdout, encoding="utf-8")
    if scenario.model_turn and session is not None:
        (directory / "session.golden.jsonl").write_text(session, encoding="utf-8")


def assert_lines_equal(actual: str, golden: str, what: str) -> None:
    """``actual`` and ``golden`` hold equal JSON values, line by line (key order and escaping aside)."""
    actual_lines, golden_lines = json_lines(actual), json_lines(golden)
    for number, (mine, theirs) in enumerate(zip(actual_lines, golden_lines, strict=False), start=1):
        assert mine == theirs, f"{what} line {number} differs"
    assert len(actual_lines) == len(golden_lines), f"{what}: {len(actual_lines)} lines, golden has {len(golden_lines)}"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario.name for scenario in SCENARIOS])
async def test_matches_the_goldens(scenario: Scenario) -> None:
    """snapshot: <name> — matches the goldens"""
    mode = snapshot_mode(scenario, os.environ)
    directory = scenario.directory()
    run = await run_scenario(
        scenario.steps(),
        mode=mode,
        fixture_file=directory / "session.jsonl",
        override_file=directory / "replay.override.json",
        workspace_dir=directory / "workspace",
    )
    assert run.returncode == 0, run.stderr
    context = ScrubContext(cwd=run.cwd, session_ids=run.session_ids)
    stdout = normalize_stdout(run.stdout, context)
    session = normalize_session_log(run.session_log, context) if run.session_log is not None else None
    update_goldens(directory, scenario, run, stdout, session, os.environ.get("DSH_UPDATE_GOLDENS") == "1")
    assert_lines_equal(stdout, (directory / "stdout.golden.jsonl").read_text(encoding="utf-8"), "stdout")
    if scenario.model_turn:
        assert session is not None, f"no session log was persisted; stderr:\n{run.stderr}"
        assert_lines_equal(session, (directory / "session.golden.jsonl").read_text(encoding="utf-8"), "session log")


def test_every_scenario_directory_is_registered_no_orphans() -> None:
    """snapshot fixtures — every scenario directory is registered (no orphans)"""
    orphans = [path for path in case_directories() if path.name not in BY_NAME]
    assert orphans == []


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario.name for scenario in SCENARIOS])
def test_every_registered_scenario_has_its_required_fixture_files(scenario: Scenario) -> None:
    """snapshot fixtures — every registered scenario has its required fixture files"""
    directory = scenario.directory()
    missing = [name for name in REQUIRED_FILES if not (directory / name).is_file()]
    assert missing == []
    if scenario.model_turn:
        assert (directory / "session.golden.jsonl").is_file()


# ------------------------------------------------------------------------------------------
# The cases authored here were recorded by this implementation, so their goldens are also
# checked against what SPEC §16.5's table pins for them, independently of any run.
def _golden(name: str, file: str) -> list[Any]:
    return json_lines((LOCAL_ROOT / name / file).read_text(encoding="utf-8"))


def _types(events: list[Any]) -> list[str]:
    return [event["type"] for event in events[1:]]


def test_authored_cancel_pins_one_partial_chunk_then_cancelled() -> None:
    """(table) cancel — one agent_message_chunk "partial", then stopReason cancelled; an aborted turn, no error;
    the partial text is the step's assistant/message"""
    frames = _golden("cancel", "stdout.golden.jsonl")
    updates = [frame["params"]["update"] for frame in frames if frame.get("method") == "session/update"]
    assert updates == [{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "partial"}}]
    assert frames[-1] == {"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "cancelled"}}
    events = _golden("cancel", "session.golden.jsonl")
    assert _types(events) == [
        "turn/start",
        "user/message",
        "step/start",
        "assistant/chunk",
        "assistant/chunk",
        "assistant/message",  # the partial answer the user saw, logged before the turn ends aborted
        "step/end",
        "turn/end",
    ]
    assert [event["data"]["chunk"]["type"] for event in events if event["type"] == "assistant/chunk"] == [
        "block-start",
        "text-delta",
    ]
    assert events[-1]["data"] == {"turn": 1, "reason": {"kind": "aborted", "reason": "session/cancel"}}


def test_authored_error_finish_pins_the_error_frame_and_step_end_before_error() -> None:
    """(table) error-finish — the prompt fails with turn failed; step/end precedes the error event"""
    message = "simulated provider error (HTTP 401)"
    frames = _golden("error-finish", "stdout.golden.jsonl")
    assert frames[-1] == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -32603, "message": f"Internal error: turn failed: {message}"},
    }
    events = _golden("error-finish", "session.golden.jsonl")
    assert _types(events) == ["turn/start", "user/message", "step/start", "step/end", "error", "turn/end"]
    assert events[-2]["data"] == {"turn": 1, "step": 1, "message": message, "code": "AUTH"}
    assert events[-1]["data"] == {"turn": 1, "reason": {"kind": "error", "message": message, "code": "AUTH"}}


def test_authored_workspace_edit_pins_three_steps_and_the_real_file_mutation() -> None:
    """(table) workspace-edit — append WORLD ((no output)), cat (hello/WORLD), reply DONE"""
    assert (LOCAL_ROOT / "workspace-edit" / "workspace" / "greeting.txt").read_text(encoding="utf-8") == "hello\n"
    events = _golden("workspace-edit", "session.golden.jsonl")
    results = [event["data"]["content"] for event in events if event["type"] == "tool/result"]
    assert results == [[{"type": "text", "text": "(no output)"}], [{"type": "text", "text": "hello\nWORLD\n"}]]
    assert [event["data"]["step"] for event in events if event["type"] == "step/start"] == [1, 2, 3]
    final = [event for event in events if event["type"] == "assistant/message"][-1]
    assert final["data"]["content"][-1] == {"type": "text", "text": "DONE"}
    assert events[-1]["data"] == {"turn": 1, "reason": {"kind": "completed"}}
    frames = _golden("workspace-edit", "stdout.golden.jsonl")
    assert frames[-1] == {"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}}
    titles = [frame["params"]["update"].get("title") for frame in frames if frame.get("method") == "session/update"]
    assert [title for title in titles if title] == ["echo WORLD >> greeting.txt", "cat greeting.txt"]


# ------------------------------------------------------------------------------------------
# Record mode and golden updates (optional paths, exercised without a key or a real write).
def test_record_mode_re_records_only_the_local_recorded_cases_and_needs_a_key() -> None:
    """(port) DSH_SNAPSHOT=record: non-recorded and reference cases are skipped; a key is required"""
    assert snapshot_mode(BY_NAME["cancel"], {}) == "replay"
    with pytest.raises(pytest.skip.Exception, match="only the recorded cases authored here"):
        snapshot_mode(BY_NAME["cancel"], {"DSH_SNAPSHOT": "record"})
    with pytest.raises(pytest.skip.Exception, match="only the recorded cases authored here"):
        snapshot_mode(BY_NAME["text-turn"], {"DSH_SNAPSHOT": "record"})
    with pytest.raises(pytest.skip.Exception, match="needs DEEPSEEK_API_KEY"):
        snapshot_mode(BY_NAME["workspace-edit"], {"DSH_SNAPSHOT": "record"})
    assert snapshot_mode(BY_NAME["workspace-edit"], {"DSH_SNAPSHOT": "record", "DEEPSEEK_API_KEY": "k"}) == "record"


def test_updating_goldens_writes_local_cases_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """(port) an update rewrites a local case's goldens (and its log after recording), never a reference one"""
    import tests.examples.acp.test_snapshots as module

    monkeypatch.setattr(module, "LOCAL_ROOT", tmp_path)
    case = tmp_path / "case"
    case.mkdir()
    replayed = ScenarioRun(stdout="", session_log="LOG\n", cwd="/c", session_ids=[], returncode=0, stderr="")
    update_goldens(case, BY_NAME["workspace-edit"], replayed, "OUT\n", "SESSION\n", update=False)
    assert list(case.iterdir()) == []  # a plain replay run writes nothing
    recorded = ScenarioRun(
        stdout="", session_log="LOG\n", cwd="/c", session_ids=[], returncode=0, stderr="", mode="record"
    )
    update_goldens(case, BY_NAME["workspace-edit"], recorded, "OUT\n", "SESSION\n", update=False)
    assert (case / "session.jsonl").read_text(encoding="utf-8") == "LOG\n"
    assert (case / "stdout.golden.jsonl").read_text(encoding="utf-8") == "OUT\n"
    assert (case / "session.golden.jsonl").read_text(encoding="utf-8") == "SESSION\n"
    other = tmp_path / "handshake"
    other.mkdir()
    update_goldens(other, BY_NAME["handshake"], replayed, "OUT\n", None, update=True)
    assert sorted(path.name for path in other.iterdir()) == ["stdout.golden.jsonl"]
    reference = BY_NAME["text-turn"].directory()
    assert reference.parent == REFERENCE_ROOT
    before = {path.name: path.read_bytes() for path in reference.iterdir() if path.is_file()}
    update_goldens(reference, BY_NAME["text-turn"], recorded, "", "", update=True)
    assert {path.name: path.read_bytes() for path in reference.iterdir() if path.is_file()} == before


def test_a_golden_mismatch_names_the_line_or_the_count() -> None:
    """(port) the comparison is by JSON value per line; a difference or a missing line fails"""
    assert_lines_equal('{"a":1,"b":"é"}\n', '{"b":"\\u00e9","a":1}\n', "x")
    with pytest.raises(AssertionError, match="x line 2 differs"):
        assert_lines_equal('{"a":1}\n{"a":2}\n', '{"a":1}\n{"a":3}\n', "x")
    with pytest.raises(AssertionError, match="1 lines, golden has 2"):
        assert_lines_equal('{"a":1}\n', '{"a":1}\n{"a":2}\n', "x")
