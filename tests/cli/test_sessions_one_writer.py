"""One writer per session across processes: two `dsh run --resume ID` raced 100 times on each backend."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from pathlib import Path

import pytest

from dsh.cli.profile import profile_entries
from dsh.cli.settings import Settings
from tests.cli.helpers import child_env, dsh, namespace, session_id_of, write_tree
from tests.plugins.persistence_postgres.conftest import cluster  # noqa: F401 - the private PostgreSQL server

RACES = 100
RACE_DRIVER = Path(__file__).with_name("resume_race.py")


def hold(marker: Path) -> str:
    """The racing prompt: the winner's command holds the session until the driver creates ``marker``."""
    return f"$ while [ ! -e {marker} ]; do sleep 0.01; done"


def storage_args(backend: str, tmp_path: Path, workspace: Path) -> list[str]:
    """The options selecting the demo model and ``backend``: ``jsonl``, ``sqlite`` (through a tree naming the
    demo model) or a PostgreSQL URL (``--store``)."""
    if backend == "jsonl":
        return ["--demo", "--sessions-root", str(tmp_path / "sessions")]
    if backend.startswith("postgresql:"):
        return ["--demo", "--store", backend]
    settings = Settings.from_args(namespace(cwd=str(workspace), demo=True), {})
    sqlite = {"id": "persistence", "name": "session-persistence-sqlite", "config": {"path": str(tmp_path / "s.db")}}
    entries = [entry if entry["id"] != "persistence" else sqlite for entry in profile_entries(settings)]
    return ["--config", str(write_tree(tmp_path / "tree.yml", entries))]


def holder_of(backend: str, pid: object) -> str:
    """How the refusal names the process holding the session: its pid (a lock file), or pid and host (a lease)."""
    return f"pid {pid}" if backend != "postgres" else f"dsh pid {pid} on {socket.gethostname()}"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", ["jsonl", "sqlite", "postgres"])
async def test_two_resumes_at_once_exactly_one_writes_the_other_is_refused_naming_it(
    backend: str, tmp_path: Path, workspace: Path, request: pytest.FixtureRequest
) -> None:
    """(PostgreSQL: the private cluster, a lease per session instead of a lock file)"""
    env = child_env(key=None, home=tmp_path / "home")
    store = request.getfixturevalue("cluster").url() if backend == "postgres" else backend
    storage = storage_args(store, tmp_path, workspace)
    first = await dsh(*storage, "--cwd", str(workspace), "run", "echo first", env=env, cwd=workspace)
    assert first.status == 0, first.stderr
    session_id = session_id_of(first.stderr)
    marker = tmp_path / "release"
    argv = [*storage, "--cwd", str(workspace), "run", "--resume", session_id, hold(marker)]
    driver = await asyncio.create_subprocess_exec(
        sys.executable,
        str(RACE_DRIVER),
        str(RACES),
        str(marker),
        *argv,
        env=env,
        cwd=workspace,
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await asyncio.wait_for(driver.communicate(), timeout=280)
    assert driver.returncode == 0
    races = [json.loads(line) for line in out.decode().splitlines()]
    assert len(races) == RACES
    for race in races:
        (winner,) = [child for child in race if child["status"] == 0]
        (loser,) = [child for child in race if child["status"] != 0]
        assert loser["status"] == 1
        assert loser["stderr"] == (
            f'dsh: cannot resume session "{session_id}": session "{session_id}" is in use by another dsh process '
            f"({holder_of(backend, winner['pid'])}); wait for it to finish or stop it, then try again\n"
        )
    shown = await dsh(*storage, "sessions", "show", "--json", session_id, env=env, cwd=workspace)
    assert shown.status == 0, shown.stderr
    _header, *events = shown.json_lines()
    ends = [event for event in events if event["type"] == "turn/end"]
    assert [end["data"]["reason"]["kind"] for end in ends] == ["completed"] * (1 + RACES)
    assert [event["seq"] for event in events] == list(range(len(events)))


async def test_twenty_runs_started_at_once_on_one_sqlite_database_all_succeed(tmp_path: Path, workspace: Path) -> None:
    """(every connection waits for another process's write lock instead of failing "database is locked")"""
    env = child_env(key=None, home=tmp_path / "home")
    storage = storage_args("sqlite", tmp_path, workspace)
    runs = await asyncio.gather(
        *(dsh(*storage, "--cwd", str(workspace), "run", f"echo run {n}", env=env, cwd=workspace) for n in range(20))
    )
    assert [run.stderr for run in runs if run.status != 0] == []
    listed = await dsh(*storage, "sessions", "list", "--json", env=env, cwd=workspace)
    assert sorted(row["id"] for row in listed.json_lines()) == sorted(session_id_of(run.stderr) for run in runs)
    assert (tmp_path / "s.db").stat().st_mode & 0o777 == 0o600
