"""Fixtures for the JSONL backend tests: a session root in a temp dir and a mounted rig."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl, log_path
from tests.core.persistence.helpers import BackendKit, Rig

TORN_FRAGMENT = b'{"type":"assistant/chunk","seq":8,"ti'


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The session root (not created: the backend makes it on first write)."""
    return tmp_path / "sessions"


@pytest.fixture
def kit(root: Path) -> BackendKit:
    def corrupt_tail(id: str, cwd: str | None) -> None:
        with open(log_path(str(root), cwd, id), "ab") as file:
            file.write(TORN_FRAGMENT)

    return BackendKit("jsonl", SessionPersistenceJsonl, {"root": str(root)}, corrupt_tail)


@pytest.fixture
async def rig(kit: BackendKit) -> AsyncIterator[Rig]:
    rig = await Rig(kit).start()
    yield rig
    await rig.close()
