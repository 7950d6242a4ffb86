"""Probing the sandbox backends and the Landlock pieces, with real processes and the real kernel.

Broken backends are real too: a ``bwrap`` on PATH that fails the way it fails
without user namespaces, one that does not confine at all, a Landlock syscall
number the kernel does not have.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.core.bash import SandboxPolicy, SandboxSupport
from dsh.core.errors import HarnessError
from dsh.kernel import Context
from dsh.plugins.bash_local import landlock, run_bash
from dsh.plugins.bash_local import sandbox as sandbox_module
from dsh.plugins.bash_local.landlock import LandlockError, create_ruleset, landlock_abi, trampoline_prefix, write_rights
from dsh.plugins.bash_local.sandbox import Launch, SandboxConfig, detect, forget_probes, platform_line, probe_bwrap
from tests.core.bash.helpers import StubExecutor


@pytest.fixture
def fresh_probes() -> Iterator[None]:
    forget_probes()
    yield
    forget_probes()


def fake_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bwrap_script: str | None) -> None:
    """PATH = a directory with bash (and a ``bwrap`` running ``bwrap_script`` when given)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    bash = shutil.which("bash")
    assert bash is not None
    (bin_dir / "bash").symlink_to(bash)
    if bwrap_script is not None:
        (bin_dir / "bwrap").write_text(f"#!{bash}\n{bwrap_script}\n")
        (bin_dir / "bwrap").chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))


def landlock_or_skip() -> int:
    abi = landlock_abi()
    if abi <= 0:
        pytest.skip("this kernel has no Landlock (Linux 5.13+ with Landlock enabled)")
    return abi


# --------------------------------------------------------------------------- the support value
def test_covers_the_confined_modes_only_when_writes_are_enforced() -> None:
    enforced = SandboxSupport(backend="landlock", fs_write=True)
    assert enforced.covers("read-only")
    assert enforced.covers("workspace-write")
    assert not enforced.covers("full-access")
    assert not SandboxSupport().covers("workspace-write")


async def test_an_executor_without_a_sandbox_reports_none() -> None:
    ctx = Context()
    stub = StubExecutor(ctx)
    assert stub.sandbox_support() == SandboxSupport(backend="none", fs_write=False, detail="no sandbox")
    await ctx.dispose()


# --------------------------------------------------------------------------- probes
def test_a_missing_bwrap_is_reported_with_the_install_hint(
    fresh_probes: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_path(tmp_path, monkeypatch, None)
    support = detect("bwrap")
    assert (support.backend, support.fs_write) == ("none", False)
    assert "apt-get install bubblewrap" in support.detail
    assert detect("bwrap") is support  # cached


def test_a_bwrap_that_cannot_create_namespaces_does_not_count(
    fresh_probes: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_path(tmp_path, monkeypatch, 'echo "bwrap: No permissions to creating new namespace" >&2; exit 1')
    support = probe_bwrap()
    assert not support.fs_write
    assert "does not work here: the probe command failed (exit 1): bwrap: No permissions" in support.detail
    assert support.detail.startswith("bubblewrap at ")  # --version printed nothing


def test_a_bwrap_that_does_not_confine_does_not_count(
    fresh_probes: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_path(
        tmp_path,
        monkeypatch,
        'while [ $# -gt 0 ] && [ "$1" != -- ]; do shift; done; [ $# -gt 0 ] || exit 0; shift; exec "$@"',
    )
    support = probe_bwrap()
    assert not support.fs_write
    assert "a write outside the writable directory went through" in support.detail


def test_auto_falls_back_to_landlock_and_says_why(
    fresh_probes: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    abi = landlock_or_skip()
    fake_path(tmp_path, monkeypatch, None)
    support = detect("auto")
    assert (support.backend, support.landlock_abi, support.fs_write) == ("landlock", abi, True)
    assert support.network == (abi >= 4)


def test_auto_without_any_backend_names_both_reasons(
    fresh_probes: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_path(tmp_path, monkeypatch, None)
    monkeypatch.setattr(landlock, "SYS_CREATE_RULESET", 100_000)  # a syscall the kernel lacks: ENOSYS
    support = detect("auto")
    assert (support.backend, support.fs_write, support.landlock_abi) == ("none", False, 0)
    assert "bwrap is not installed" in support.detail
    assert "Landlock is not available" in support.detail


def test_auto_prefers_bwrap_and_records_the_landlock_abi(fresh_probes: None) -> None:
    if not detect("bwrap").fs_write:
        pytest.skip(f"bwrap cannot run on this machine: {detect('bwrap').detail}")
    support = detect("auto")
    assert (support.backend, support.network, support.landlock_abi) == ("bwrap", True, landlock_abi())


def test_a_landlock_that_does_not_hold_does_not_count(fresh_probes: None, monkeypatch: pytest.MonkeyPatch) -> None:
    abi = landlock_or_skip()
    monkeypatch.setattr(landlock, "TRAMPOLINE", "import sys; sys.exit(3)")  # a launcher that runs nothing
    support = detect("landlock")
    assert (support.backend, support.fs_write, support.landlock_abi) == ("none", False, abi)
    assert "the probe command failed (exit 3)" in support.detail


def test_a_launcher_that_cannot_start_is_a_failed_probe(tmp_path: Path) -> None:
    failure = sandbox_module._probe_run(lambda _policy: Launch((str(tmp_path / "missing-launcher"),)))
    assert failure is not None
    assert failure.startswith("FileNotFoundError")


def test_the_bwrap_version_falls_back_to_a_name(tmp_path: Path) -> None:
    assert sandbox_module._bwrap_version(str(tmp_path / "missing")) == "bubblewrap"


def test_the_platform_line_names_the_kernel() -> None:
    assert os.uname().release in platform_line()


# --------------------------------------------------------------------------- landlock pieces
def test_landlock_is_absent_off_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert landlock_abi() == 0


def test_write_rights_grow_with_the_abi() -> None:
    assert not write_rights(1) & landlock.REFER
    assert write_rights(2) & landlock.REFER
    assert not write_rights(2) & landlock.TRUNCATE
    assert write_rights(3) & landlock.TRUNCATE
    assert not write_rights(7) & (landlock.READ_FILE | landlock.READ_DIR | landlock.EXECUTE)


def run_confined(ruleset: int, script: str, *program: str) -> subprocess.CompletedProcess[bytes]:
    argv = [*trampoline_prefix(ruleset), *(program or ("bash", "bash", "-c", script))]
    return subprocess.run(argv, capture_output=True, pass_fds=(ruleset,), timeout=30, check=False)


def test_an_abi_1_ruleset_without_network_rules_still_confines(tmp_path: Path) -> None:
    landlock_or_skip()
    ruleset = create_ruleset(SandboxPolicy(mode="read-only"), 1)
    try:
        done = run_confined(ruleset, f"echo x > {tmp_path}/x; echo $?; echo y > /dev/null && echo null")
    finally:
        os.close(ruleset)
    assert done.stdout == b"1\nnull\n"
    assert not (tmp_path / "x").exists()


def test_a_ruleset_that_cannot_be_built_leaks_nothing(tmp_path: Path) -> None:
    abi = landlock_or_skip()
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(FileNotFoundError):
        create_ruleset(SandboxPolicy(mode="workspace-write", writable=(str(tmp_path / "gone"),)), abi)
    hostname = tmp_path / "file"
    hostname.write_text("")
    with pytest.raises(LandlockError) as raised:  # directory rights on a file: the kernel says EINVAL
        create_ruleset(SandboxPolicy(mode="workspace-write", writable=(str(hostname),)), abi)
    assert raised.value.errno == 22
    assert len(os.listdir("/proc/self/fd")) == before


def test_the_trampoline_exits_125_when_it_cannot_restrict_itself() -> None:
    landlock_or_skip()
    read, write = os.pipe()  # not a ruleset: landlock_restrict_self refuses it
    try:
        done = run_confined(read, "echo ran")
    finally:
        os.close(read)
        os.close(write)
    assert done.returncode == 125
    assert done.stdout == b""
    assert b"landlock: cannot restrict the command" in done.stderr


def test_the_trampoline_exits_127_when_the_program_is_missing(tmp_path: Path) -> None:
    abi = landlock_or_skip()
    ruleset = create_ruleset(SandboxPolicy(mode="read-only"), abi)
    try:
        done = run_confined(ruleset, "", str(tmp_path / "nope"), "nope")
    finally:
        os.close(ruleset)
    assert done.returncode == 127
    assert b"cannot run" in done.stderr


async def test_a_missing_launcher_is_a_spawn_error_naming_the_sandbox(tmp_path: Path) -> None:
    launcher = str(tmp_path / "bwrap")
    process = run_bash("true", cwd=str(tmp_path), timeout_ms=5000, max_output_bytes=1000, sandbox=Launch((launcher,)))
    with pytest.raises(HarnessError) as raised:
        await process.done
    assert raised.value.code == "ENOENT"
    assert "the sandbox program cannot be run" in str(raised.value)


def test_a_launcher_takes_the_program_with_or_without_its_argv0() -> None:
    assert Launch(("bwrap", "--")).argv("/bin/bash", ["bash", "-c", "x"]) == ["bwrap", "--", "/bin/bash", "-c", "x"]
    with_fd = Launch(("python", "-c", "src", "5"), (5,), with_argv0=True)
    assert with_fd.argv("/bin/bash", ["bash", "-c", "x"]) == [
        "python",
        "-c",
        "src",
        "5",
        "/bin/bash",
        "bash",
        "-c",
        "x",
    ]


def test_writable_directories_must_be_absolute() -> None:
    with pytest.raises(ValueError, match="'rel/dir' is relative; write it as an absolute path"):
        SandboxConfig(writable=("rel/dir",))


def test_an_abi_4_read_only_ruleset_cuts_tcp_but_not_signals(tmp_path: Path) -> None:
    if landlock_or_skip() < 4:
        pytest.skip("TCP rules need Landlock ABI 4")
    ruleset = create_ruleset(SandboxPolicy(mode="read-only"), 4)
    try:
        done = run_confined(
            ruleset, f"kill -0 {os.getpid()} && echo signalled; exec 3<>/dev/tcp/127.0.0.1/9 || echo cut"
        )
    finally:
        os.close(ruleset)
    assert done.stdout == b"signalled\ncut\n"
