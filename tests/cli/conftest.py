"""Fixtures of the `dsh` command tests: a clean environment, a workspace, a sessions root, a wire server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dsh.testing.wire import WireServer


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No DeepSeek or dsh variables from the shell; DSH_HOME in the test's temp dir."""
    for name in ("DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", "DSH_HOME", "XDG_DATA_HOME", "DSH_STORE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    return monkeypatch


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The agent's working directory, with one file in it."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello\n")
    return folder


@pytest.fixture
def sessions_root(tmp_path: Path) -> Path:
    return tmp_path / "sessions"


@pytest.fixture
async def server(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[WireServer]:
    """A started wire server (tests `add` entries) that in-process runs reach through the environment."""
    async with WireServer() as wire:
        monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
        monkeypatch.setenv("DEEPSEEK_BASE_URL", wire.base_url)
        yield wire
