"""The OS sandbox of ``bash-local`` with the real backends: bubblewrap and Landlock, each forced by config.

Every test names the backend it ran in its id and asserts that backend was the one
in use; a backend this machine cannot run is skipped with the probe's reason.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.core.approval import PermissionService, PermissionState
from dsh.core.bash import BashExecRequest, SandboxPolicy
from dsh.core.errors import HarnessError
from dsh.kernel import Context
from dsh.plugins.bash_local import LocalBashExecutor
from dsh.plugins.bash_local.sandbox import SandboxConfig, detect, forget_probes, temp_dirs
from tests.plugins.bash_local.helpers import LoadExecutor

BACKENDS = ("bwrap", "landlock")


def require(backend: str) -> None:
    """Skip when this machine cannot run ``backend`` (the probe says why)."""
    support = detect(backend)  # type: ignore[arg-type]
    if not support.fs_write:
        pytest.skip(f"{backend} cannot run on this machine: {support.detail}")


def outside_base() -> str:
    """A writable directory outside every temp directory (so ``workspace-write`` does not cover it)."""
    temps = temp_dirs()
    for base in ("/var/tmp", str(Path.home()), str(Path(__file__).resolve().parents[3])):
        real = os.path.realpath(base)
        if os.access(real, os.W_OK) and not any(real == t or real.startswith(t + os.sep) for t in temps):
            return real
    pytest.skip("no writable directory outside the temp directories")


@pytest.fixture
def outside() -> Iterator[Path]:
    """A fresh directory under :func:`outside_base`, removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="dsh-sandbox-test-", dir=outside_base()))
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def run(bash: LocalBashExecutor, command: str, **request: object) -> tuple[int | None, str, str]:
    result = await bash.run(bash.resolve(BashExecRequest(command=command, timeout_ms=20_000, **request)))  # type: ignore[arg-type]
    return result.exit_code, result.stdout.text, result.stderr.text


@pytest.mark.parametrize("backend", BACKENDS)
async def test_workspace_write_allows_the_workspace_and_temp_and_refuses_outside(
    backend: str, load: LoadExecutor, outside: Path
) -> None:
    require(backend)
    workspace = outside / "ws"
    workspace.mkdir()
    bash, _ = await load({"cwd": str(workspace), "sandbox": {"mode": "workspace-write", "backend": backend}})
    assert bash.sandbox_support().backend == backend
    scratch = Path(tempfile.mkdtemp())
    try:
        _, out, err = await run(
            bash,
            f"echo in > inside.txt && echo tmp > {scratch}/t.txt && echo ok; echo out > {outside}/escape.txt; echo $?",
        )
        assert out == "ok\n1\n", err
        assert (workspace / "inside.txt").read_text() == "in\n"
        assert (scratch / "t.txt").read_text() == "tmp\n"
        assert not (outside / "escape.txt").exists()
        assert "escape.txt" in err
    finally:
        shutil.rmtree(scratch)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_workspace_write_refuses_removing_and_renaming_outside(
    backend: str, load: LoadExecutor, outside: Path
) -> None:
    require(backend)
    (outside / "keep.txt").write_text("kept")
    workspace = outside / "ws"
    workspace.mkdir()
    bash, _ = await load({"cwd": str(workspace), "sandbox": {"mode": "workspace-write", "backend": backend}})
    code, _, _ = await run(bash, f"rm -f {outside}/keep.txt || mv {outside}/keep.txt ./moved.txt")
    assert code != 0
    assert (outside / "keep.txt").read_text() == "kept"  # a move may copy it in (reading is allowed), not remove it


@pytest.mark.parametrize("backend", BACKENDS)
async def test_read_only_refuses_writes_everywhere_but_dev_null(
    backend: str, load: LoadExecutor, outside: Path
) -> None:
    require(backend)
    bash, _ = await load({"cwd": str(outside), "sandbox": {"mode": "read-only", "backend": backend}})
    scratch = Path(tempfile.mkdtemp())
    try:
        script = (
            f"cat /etc/hostname > /dev/null && echo read; "
            f"echo a > here.txt; echo b > {scratch}/t.txt; mkdir newdir; echo $?"
        )
        _, out, err = await run(bash, script)
        assert out == "read\n1\n", err
        assert list(outside.iterdir()) == []
        assert list(scratch.iterdir()) == []
    finally:
        shutil.rmtree(scratch)


@pytest.mark.parametrize(("backend", "mode"), [(b, m) for b in BACKENDS for m in ("read-only", "workspace-write")])
async def test_read_only_cuts_the_network_and_workspace_write_does_not(
    backend: str, mode: str, load: LoadExecutor, outside: Path
) -> None:
    require(backend)
    support = detect(backend)  # type: ignore[arg-type]
    if not support.network:
        pytest.skip(f"{backend} does not cut the network here: {support.detail}")
    accepted: list[bool] = []

    def accept(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(True)
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        bash, _ = await load({"cwd": str(outside), "sandbox": {"mode": mode, "backend": backend}})
        code, out, _ = await run(bash, f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected")
    finally:
        server.close()
        await server.wait_closed()
    if mode == "read-only":
        assert (code, out, accepted) == (1, "", [])
    else:
        assert (code, out) == (0, "connected\n")


@pytest.mark.parametrize("backend", BACKENDS)
async def test_background_tasks_are_confined_too(backend: str, load: LoadExecutor, outside: Path) -> None:
    require(backend)
    bash, _ = await load({"cwd": str(outside), "sandbox": {"mode": "read-only", "backend": backend}})
    task = bash.start(bash.resolve(BashExecRequest(command=f"echo x > {outside}/bg.txt")))
    await task.done
    assert task.exit_code == 1
    assert not (outside / "bg.txt").exists()


@pytest.mark.parametrize("backend", BACKENDS)
async def test_extra_writable_directories(backend: str, load: LoadExecutor, outside: Path) -> None:
    require(backend)
    workspace, extra = outside / "ws", outside / "extra"
    workspace.mkdir()
    extra.mkdir()
    config = {"mode": "workspace-write", "backend": backend, "writable": [str(extra), str(outside / "missing")]}
    bash, _ = await load({"cwd": str(workspace), "sandbox": config})
    spec = bash.resolve(BashExecRequest(command=f"echo e > {extra}/e.txt"))
    assert spec.sandbox is not None
    assert str(extra) in spec.sandbox.writable
    assert not any("missing" in path for path in spec.sandbox.writable)
    assert (await bash.run(spec)).exit_code == 0
    assert (extra / "e.txt").read_text() == "e\n"
    (outside / "missing").mkdir()  # created later: the next command may write there
    later = bash.resolve(BashExecRequest(command="true")).sandbox
    assert later is not None
    assert str(outside / "missing") in later.writable
    assert bash.resolve(BashExecRequest(command="true")).sandbox is later  # now kept


@pytest.mark.parametrize("backend", BACKENDS)
async def test_the_request_workspace_beats_the_config_cwd(backend: str, load: LoadExecutor, outside: Path) -> None:
    require(backend)
    configured, session = outside / "configured", outside / "session"
    configured.mkdir()
    session.mkdir()
    bash, _ = await load({"cwd": str(configured), "sandbox": {"mode": "workspace-write", "backend": backend}})
    code, _, _ = await run(bash, f"echo s > {session}/s.txt && ! echo c > {configured}/c.txt", workspace=str(session))
    assert code == 0
    assert (session / "s.txt").exists()
    assert not (configured / "c.txt").exists()


# ------------------------------------------------------------------ the mode from the permissions service
@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """A PATH with bash and no bwrap, and fresh probes (the real "not installed" case)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    bash = shutil.which("bash")
    assert bash is not None
    (bin_dir / "bash").symlink_to(bash)
    monkeypatch.setenv("PATH", str(bin_dir))
    forget_probes()
    yield
    forget_probes()


async def test_the_permissions_service_decides_the_mode(root: Context, load: LoadExecutor, outside: Path) -> None:
    require("auto")
    permissions = PermissionService(root, PermissionState(mode="read-only"))
    bash, _ = await load({"cwd": str(outside), "sandbox": {"mode": "full-access"}})
    assert bash.resolve(BashExecRequest(command="true")).sandbox == SandboxPolicy(mode="read-only")
    permissions.default = PermissionState(mode="workspace-write", plan=True)
    assert bash.resolve(BashExecRequest(command="true")).sandbox == SandboxPolicy(mode="read-only")
    permissions.default = PermissionState(mode="workspace-write")
    policy = bash.resolve(BashExecRequest(command="true")).sandbox
    assert policy is not None
    assert policy.writable[0] == str(outside)
    permissions.default = PermissionState(mode="full-access")
    assert bash.resolve(BashExecRequest(command="true")).sandbox is None


async def test_without_a_working_sandbox_a_config_mode_fails_closed_and_a_service_mode_runs_unconfined(
    no_bwrap: None, root: Context, load: LoadExecutor, outside: Path
) -> None:
    bash, _ = await load({"cwd": str(outside), "sandbox": {"mode": "workspace-write", "backend": "bwrap"}})
    support = bash.sandbox_support()
    assert (support.backend, support.fs_write) == ("none", False)
    assert "bwrap is not installed" in support.detail
    with pytest.raises(HarnessError) as raised:
        bash.resolve(BashExecRequest(command="true"))
    assert raised.value.code == "SANDBOX_UNAVAILABLE"
    assert "install bubblewrap, or set sandbox.mode to full-access" in str(raised.value)
    PermissionService(root, PermissionState(mode="workspace-write"))
    spec = bash.resolve(BashExecRequest(command=f"echo x > {outside}/approved.txt"))
    assert spec.sandbox is None
    assert (await bash.run(spec)).exit_code == 0  # the permissions policy asked for it: nothing confines it
    assert (outside / "approved.txt").exists()


async def test_no_mode_and_full_access_leave_commands_unconfined(load: LoadExecutor) -> None:
    bash, _ = await load()
    assert bash.resolve(BashExecRequest(command="true")).sandbox is None
    assert bash.config.sandbox == SandboxConfig()


async def test_a_broken_ruleset_fails_the_request(load: LoadExecutor, outside: Path) -> None:
    require("landlock")
    bash, _ = await load({"cwd": str(outside), "sandbox": {"mode": "workspace-write", "backend": "landlock"}})
    with pytest.raises(HarnessError) as raised:
        bash.sandbox.launch(SandboxPolicy(mode="workspace-write", writable=(str(outside / "gone"),)))
    assert raised.value.code == "SANDBOX_UNAVAILABLE"
    assert "cannot build the Landlock ruleset" in str(raised.value)


async def test_rulesets_are_built_once_per_policy_and_closed_at_disposal(load: LoadExecutor, outside: Path) -> None:
    require("landlock")
    bash, fiber = await load({"cwd": str(outside), "sandbox": {"mode": "read-only", "backend": "landlock"}})
    first = bash.resolve(BashExecRequest(command="true"))
    assert first.sandbox is not None
    launch = bash.sandbox.launch(first.sandbox)
    assert bash.sandbox.launch(first.sandbox) is launch
    (fd,) = launch.pass_fds
    os.fstat(fd)
    await fiber.dispose()
    with pytest.raises(OSError):
        os.fstat(fd)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_confined_command_that_times_out_is_killed_with_its_children(
    backend: str, load: LoadExecutor, outside: Path
) -> None:
    require(backend)
    bash, _ = await load({"cwd": str(outside), "sandbox": {"mode": "workspace-write", "backend": backend}})
    spec = bash.resolve(BashExecRequest(command="sleep 60 & echo $! > child.pid; wait", timeout_ms=1500))
    result = await bash.run(spec)
    assert result.timed_out
    assert bash.owned_groups == 0
    assert int((outside / "child.pid").read_text()) > 0  # it ran (a pid of the sandbox's own namespace)
    assert sleepers_in(outside) == []


def sleepers_in(directory: Path) -> list[int]:
    """The live processes running ``sleep`` with ``directory`` as their working directory."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:  # gone meanwhile
            continue
        if cmdline.startswith(b"sleep\0") and cwd == str(directory):
            found.append(int(entry))
    return found


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_confined_command_cannot_remount_its_way_out(backend: str, load: LoadExecutor, outside: Path) -> None:
    """Run as root (as in CI containers), the command has capabilities: none of them may undo the sandbox."""
    require(backend)
    workspace = outside / "ws"
    workspace.mkdir()
    bash, _ = await load({"cwd": str(workspace), "sandbox": {"mode": "workspace-write", "backend": backend}})
    script = (
        "mount -o remount,rw,bind / 2>/dev/null; mount -o remount,rw / 2>/dev/null; "
        f"mount -t tmpfs none {outside} 2>/dev/null; echo x > {outside}/escape.txt"
    )
    code, _, _ = await run(bash, script)
    assert code != 0
    assert not (outside / "escape.txt").exists()


@pytest.mark.parametrize("mode", ["read-only", "workspace-write"])
async def test_landlock_read_only_cannot_signal_outside_its_sandbox(mode: str, load: LoadExecutor) -> None:
    require("landlock")
    if detect("landlock").landlock_abi < 6:
        pytest.skip(f"signal scoping needs Landlock ABI 6, this kernel has {detect('landlock').landlock_abi}")
    bash, _ = await load({"sandbox": {"mode": mode, "backend": "landlock"}})
    code, _, _ = await run(bash, f"kill -0 {os.getpid()}")
    assert code == (1 if mode == "read-only" else 0)
