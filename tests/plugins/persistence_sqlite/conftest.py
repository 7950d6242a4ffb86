"""Fixtures for the SQLite backend tests: a database file in a temp dir and mounted rigs."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dsh.plugins.persistence_sqlite import SessionPersistenceSqlite
from tests.core.persistence.helpers import BackendKit, Rig


def insert_torn_row(path: Path, id: str) -> None:
    """Add a row past the last seq whose data is not JSON (a crash mid-write, as SPEC §4c simulates)."""
    db = sqlite3.connect(path)
    try:
        with db:
            (last,) = db.execute("SELECT MAX(seq) FROM events WHERE session_id = ?", (id,)).fetchone()
            db.execute(
                "INSERT INTO events (session_id, seq, type, time, data) VALUES (?, ?, ?, 0, ?)",
                (id, last + 1, "assistant/chunk", "{not valid json"),
            )
    finally:
        db.close()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "sessions.db"


@pytest.fixture
def kit(db_path: Path) -> BackendKit:
    return BackendKit(
        "sqlite",
        SessionPersistenceSqlite,
        {"path": str(db_path)},
        lambda id, _cwd: insert_torn_row(db_path, id),
    )


@pytest.fixture
async def rig(kit: BackendKit) -> AsyncIterator[Rig]:
    rig = await Rig(kit).start()
    yield rig
    await rig.close()


@pytest.fixture
async def memory_rig() -> AsyncIterator[Rig]:
    rig = await Rig(BackendKit("sqlite", SessionPersistenceSqlite, {"path": ":memory:"})).start()
    yield rig
    await rig.close()
