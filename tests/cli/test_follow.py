"""`dsh sessions show --follow`: the live tail of a session another process writes (JSONL and SQLite)."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import pytest

from dsh.cli import amain, follow
from dsh.core.persistence import POLL_INTERVAL_S
from tests.cli.follow_scenario import follow_a_live_run
from tests.cli.helpers import child_env, dsh, spawn


async def test_follow_prints_a_jsonl_session_while_another_process_writes_it(tmp_path: Path) -> None:
    await follow_a_live_run(tmp_path, ["--sessions-root", str(tmp_path / "sessions")])


async def test_follow_prints_a_sqlite_session_while_another_process_writes_it(tmp_path: Path) -> None:
    await follow_a_live_run(tmp_path, ["--store", f"sqlite:///{tmp_path / 'sessions.db'}"])


async def _finished_session(tmp_path: Path) -> tuple[list[str], str]:
    root = tmp_path / "sessions"
    env = child_env(home=tmp_path / "home")
    done = await dsh("--demo", "--sessions-root", str(root), "run", "--cwd", str(tmp_path), "hi", env=env, cwd=tmp_path)
    assert done.status == 0, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("dsh: session ")]
    return ["--sessions-root", str(root)], line.removeprefix("dsh: session ")


async def test_follow_until_idle_of_an_idle_session_prints_it_and_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store, session_id = await _finished_session(tmp_path)
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    assert await amain([*store, "sessions", "show", "--follow", "--until-idle", "--json", session_id[:8]]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert json.loads(lines[0])["id"] == session_id
    assert json.loads(lines[-1])["type"] == "turn/end"
    assert await amain([*store, "sessions", "show", "--follow", "--until-idle", session_id]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"session {session_id}\n")
    assert "── turn 1 ended: completed ──" in out


async def test_follow_of_an_unknown_session_names_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    status = await amain(["--sessions-root", str(tmp_path), "sessions", "show", "--follow", "nope"])
    assert status == 1
    assert "see `dsh sessions list`" in capsys.readouterr().err


async def test_follow_stops_when_the_session_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store, session_id = await _finished_session(tmp_path)
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    follower = asyncio.ensure_future(amain([*store, "sessions", "show", "--follow", "--json", session_id]))
    while '"turn/end"' not in capsys.readouterr().out:
        await asyncio.sleep(POLL_INTERVAL_S)
    removed = await dsh(*store, "sessions", "rm", session_id, env=child_env(home=tmp_path / "home"), cwd=tmp_path)
    assert removed.status == 0, removed.stderr
    assert await asyncio.wait_for(follower, 10) == 0


async def test_ctrl_c_ends_a_follow_with_status_130(tmp_path: Path) -> None:
    store, session_id = await _finished_session(tmp_path)
    env = child_env(home=tmp_path / "home")
    follower = await spawn(*store, "sessions", "show", "--follow", "--json", session_id, env=env, cwd=tmp_path)
    assert follower.stdout is not None
    while b'"turn/end"' not in await asyncio.wait_for(follower.stdout.readline(), 30):
        pass
    follower.send_signal(signal.SIGINT)
    assert await asyncio.wait_for(follower.wait(), 30) == 130


async def test_a_session_gone_between_the_lookup_and_the_listing_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def vanished(persistence: object, text: str) -> str:
        return "vanished-id"

    store, _ = await _finished_session(tmp_path)  # another session is listed
    monkeypatch.setattr(follow, "resolve_session_id", vanished)
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    assert await amain([*store, "sessions", "show", "--follow", "vanished"]) == 1
    assert 'session "vanished-id" is no longer stored' in capsys.readouterr().err


def test_the_jsonl_change_mark_of_a_log_removed_meanwhile_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dsh.plugins.persistence_jsonl import plugin as jsonl

    backend = object.__new__(jsonl.SessionPersistenceJsonl)
    monkeypatch.setattr(backend, "_find", lambda id: str(tmp_path / "gone.jsonl"), raising=False)
    assert backend._mark("gone") is None
    monkeypatch.setattr(backend, "_find", lambda id: None, raising=False)
    assert backend._mark("gone") is None


async def test_until_idle_without_follow_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    assert await amain(["--sessions-root", str(tmp_path), "sessions", "show", "--until-idle", "x"]) == 2
    assert "--until-idle only applies with --follow" in capsys.readouterr().err
