"""The bash tool through the sandbox: each agent's own workspace and mode, from its session and the permissions service."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.core.approval import PermissionService, PermissionState
from dsh.kernel import Context
from dsh.plugins.bash_local.sandbox import detect
from tests.plugins.bash_local.test_sandbox import outside_base
from tests.plugins.tool_bash.helpers import FakeAgent, boot


@pytest.fixture
def projects() -> Iterator[tuple[Path, Path]]:
    """Two project directories outside the temp directories."""
    base = Path(tempfile.mkdtemp(prefix="dsh-sandbox-tools-", dir=outside_base()))
    first, second = base / "first", base / "second"
    first.mkdir()
    second.mkdir()
    yield first, second
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("backend", ["bwrap", "landlock"])
async def test_two_sessions_write_their_own_workspace_only_and_each_keeps_its_mode(
    backend: str, projects: tuple[Path, Path]
) -> None:
    support = detect(backend)  # type: ignore[arg-type]
    if not support.fs_write:
        pytest.skip(f"{backend} cannot run on this machine: {support.detail}")
    first, second = projects
    root = Context()
    try:
        permissions = PermissionService(root, PermissionState(mode="workspace-write"))
        stack = await boot(root, config={"sandbox": {"backend": backend}})
        assert stack.executor.sandbox_support().backend == backend
        alice, bob = FakeAgent("alice", cwd=str(first)), FakeAgent("bob", cwd=str(second))
        command = {"command": f"echo a > mine.txt; echo b > {second}/theirs.txt; echo done"}
        out = await stack.text("bash", command, alice)
        assert "done" in out
        assert (first / "mine.txt").exists()
        assert not (second / "theirs.txt").exists()  # bob's workspace is not alice's

        await permissions.set_mode(bob, mode="read-only")
        await stack.text("bash", {"command": "echo b > mine.txt; true"}, bob)
        assert not (second / "mine.txt").exists()  # bob is read-only now
        await stack.text("bash", {"command": "echo again > mine.txt"}, alice)
        assert (first / "mine.txt").read_text() == "again\n"  # alice still writes hers
    finally:
        await root.dispose()
