"""`--store URL` / `$DSH_STORE`: the session backend of every command (JSONL, SQLite, PostgreSQL)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.cli import amain
from dsh.cli.errors import CliError
from dsh.cli.profile import profile_entries
from dsh.cli.settings import Settings, parse_store
from tests.cli.helpers import namespace
from tests.plugins.persistence_postgres.cluster import start_cluster


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    cluster = start_cluster()
    try:
        yield cluster.url()
    finally:
        cluster.stop()


def test_parse_store_names_the_backend_and_its_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert parse_store("sqlite:///var/db/s.db") == ("sqlite", "/var/db/s.db")
    assert parse_store("sqlite://rel.db") == ("sqlite", str(tmp_path / "rel.db"))
    assert parse_store("postgresql://u@h/db?host=/run/pg") == ("postgres", "postgresql://u@h/db?host=/run/pg")
    assert parse_store("postgres://h/db") == ("postgres", "postgres://h/db")
    assert parse_store("logs") == ("jsonl", str(tmp_path / "logs"))
    with pytest.raises(CliError, match=r"--store sqlite:// names no database file: use sqlite:///path") as raised:
        parse_store("sqlite://")
    assert raised.value.status == 2


def persistence_of(settings: Settings) -> dict[str, object]:
    return next(entry for entry in profile_entries(settings, "storage") if entry["id"] == "persistence")


def test_the_store_selects_the_persistence_entry(tmp_path: Path) -> None:
    jsonl = Settings.from_args(namespace(store=str(tmp_path / "logs")), {})
    assert (jsonl.store, jsonl.sessions_root) == (None, tmp_path / "logs")
    assert persistence_of(jsonl)["config"] == {"root": str(tmp_path / "logs")}
    sqlite = Settings.from_args(namespace(), {"DSH_STORE": f"sqlite://{tmp_path}/s.db"})
    assert persistence_of(sqlite) == {
        "id": "persistence",
        "name": "session-persistence-sqlite",
        "config": {"path": f"{tmp_path}/s.db"},
    }
    postgres = Settings.from_args(namespace(store="postgresql:///dsh"), {"DSH_STORE": "ignored"})
    assert persistence_of(postgres) == {
        "id": "persistence",
        "name": "session-persistence-postgres",
        "config": {"url": "postgresql:///dsh"},
    }
    with pytest.raises(CliError, match="--store and --sessions-root both name the session store"):
        Settings.from_args(namespace(store="postgresql:///dsh", sessions_root=str(tmp_path)), {})


async def run_then_list(store: str, workspace: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    assert await amain(["--store", store, "run", "--demo", "--cwd", str(workspace), "list the files"]) == 0
    capsys.readouterr()
    assert await amain(["--store", store, "sessions", "list", "--json"]) == 0
    out, _err = capsys.readouterr()
    return [json.loads(line) for line in out.splitlines()]


async def test_run_and_sessions_use_a_sqlite_store(
    tmp_path: Path, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [row] = await run_then_list(f"sqlite://{tmp_path}/state/s.db", workspace, capsys)
    assert row["cwd"] == str(workspace)
    assert (tmp_path / "state" / "s.db").exists()
    assert not (tmp_path / "home" / "sessions").exists()


async def test_run_resume_and_sessions_use_a_postgresql_store(
    pg_url: str, workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [row] = await run_then_list(pg_url, workspace, capsys)
    assert row["cwd"] == str(workspace)
    session_id = str(row["id"])
    assert await amain(["--store", pg_url, "run", "--demo", "--resume", session_id, "again"]) == 0
    capsys.readouterr()
    assert await amain(["--store", pg_url, "sessions", "show", "--json", session_id]) == 0
    out, _err = capsys.readouterr()
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines[0]["type"] == "session"
    assert [line["data"]["turn"] for line in lines if line["type"] == "turn/end"] == [1, 2]
