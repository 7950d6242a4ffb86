"""``dsh doctor``: the real probes of this machine, and a machine without any sandbox."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh.cli import amain
from dsh.cli.doctor import enforced
from dsh.core.bash import SandboxSupport
from dsh.plugins.bash_local import detect, forget_probes, landlock


@pytest.fixture(autouse=True)
def fresh_probes() -> Iterator[None]:
    forget_probes()
    yield
    forget_probes()


async def test_doctor_reports_the_backends_and_what_each_mode_enforces(capsys: pytest.CaptureFixture[str]) -> None:
    assert await amain(["doctor"]) == 0
    out = capsys.readouterr().out
    support = detect("auto")
    names = {"bwrap": "bubblewrap", "landlock": "Landlock", "none": "none"}
    assert f"in use:     {names[support.backend]} (backend auto" in out
    assert ("bubblewrap: works" in out) == detect("bwrap").fs_write
    assert ("Landlock:   works" in out) == detect("landlock").fs_write
    assert "full-access:     nothing is confined (by choice)" in out
    if support.fs_write:
        assert "workspace-write: file writes only inside the workspace" in out
    else:  # only on a machine without any sandbox
        assert "not confined here" in out


async def test_doctor_reports_a_forced_backend(capsys: pytest.CaptureFixture[str]) -> None:
    if not detect("landlock").fs_write:
        pytest.skip(f"Landlock cannot run here: {detect('landlock').detail}")
    assert await amain(["doctor", "--backend", "landlock"]) == 0
    out = capsys.readouterr().out
    assert "in use:     Landlock (forced: landlock)" in out
    expected = "TCP bind/connect cut" if detect("landlock").network else "network open (Landlock ABI"
    assert expected in out


async def test_without_any_sandbox_doctor_says_bash_falls_back_to_approvals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    bash = shutil.which("bash")
    assert bash is not None
    (bin_dir / "bash").symlink_to(bash)
    monkeypatch.setenv("PATH", str(bin_dir))  # no bwrap
    monkeypatch.setattr(landlock, "SYS_CREATE_RULESET", 100_000)  # a syscall the kernel lacks: no Landlock
    assert await amain(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "bubblewrap: does not work: bwrap is not installed" in out
    assert "Landlock:   does not work: Landlock is not available" in out
    assert "in use:     none" in out
    assert out.count("not confined here: the permissions plugin asks before each bash call") == 2
    assert "to sandbox bash: install bubblewrap" in out


def test_landlock_before_abi_4_leaves_the_network_open() -> None:
    support = SandboxSupport(backend="landlock", fs_write=True, landlock_abi=3)
    assert enforced(support, "read-only") == (
        "no file writes (but /dev/null); network open (Landlock ABI 3 cannot cut it; ABI 4 can)"
    )
