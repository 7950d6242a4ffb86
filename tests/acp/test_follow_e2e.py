"""`session/load` over ACP of a session another `dsh` process is running (JSONL and SQLite), then its takeover."""

from __future__ import annotations

from pathlib import Path

from tests.acp.follow_scenario import follow_then_take_over


async def test_a_jsonl_session_another_process_runs_is_followed_live_then_taken_over_when_it_ends(
    tmp_path: Path,
) -> None:
    await follow_then_take_over(tmp_path, ["--sessions-root", str(tmp_path / "sessions")])


async def test_a_sqlite_session_another_process_runs_is_followed_live_then_taken_over_when_it_ends(
    tmp_path: Path,
) -> None:
    await follow_then_take_over(tmp_path, ["--store", f"sqlite:///{tmp_path / 'sessions.db'}"])


async def test_a_followed_session_whose_writer_is_killed_is_repaired_and_taken_over_by_a_prompt(
    tmp_path: Path,
) -> None:
    await follow_then_take_over(tmp_path, ["--sessions-root", str(tmp_path / "sessions")], kill=True)
