"""How the sandbox decides, apart from running bubblewrap: the argv it builds, what a passing probe
reports, ``auto`` taking bubblewrap when it works, and a bubblewrap launch.

The real confinement is tested in ``test_sandbox.py`` on every backend that runs here; these tests
hold on a machine without bubblewrap too (the probe's command runner is replaced, nothing else).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dsh.core.bash import SandboxPolicy, SandboxSupport
from dsh.plugins.bash_local import sandbox as sandbox_module
from dsh.plugins.bash_local.bwrap import bwrap_prefix
from dsh.plugins.bash_local.sandbox import Sandbox, SandboxConfig, detect, forget_probes


@pytest.fixture(autouse=True)
def fresh_probes() -> Iterator[None]:
    forget_probes()
    yield
    forget_probes()


def test_the_bwrap_argv_binds_the_writable_directories_and_cuts_the_network_only_in_read_only() -> None:
    write = bwrap_prefix("/usr/bin/bwrap", SandboxPolicy(mode="workspace-write", writable=("/w", "/tmp")))
    assert write[:11] == (
        "/usr/bin/bwrap",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--unshare-pid",
        "--cap-drop",
        "ALL",
    )
    assert "--unshare-net" not in write
    assert write[write.index("/tmp") - 1 : write.index("/tmp") + 2] == ("--bind", "/tmp", "/tmp")
    read_only = bwrap_prefix("/usr/bin/bwrap", SandboxPolicy(mode="read-only"))
    assert "--unshare-net" in read_only
    assert "--bind" not in read_only


def _working_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_module, "find_bwrap", lambda: "/opt/bwrap")
    monkeypatch.setattr(sandbox_module, "_probe_run", lambda launch: None)
    monkeypatch.setattr(sandbox_module, "_bwrap_version", lambda bwrap: "bubblewrap 0.8.0")


def test_a_passing_probe_reports_bwrap_enforcing_writes_and_network_and_auto_takes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _working_bwrap(monkeypatch)
    support = detect("bwrap")
    assert support == SandboxSupport(
        backend="bwrap", fs_write=True, network=True, detail="bubblewrap 0.8.0 at /opt/bwrap"
    )
    chosen = detect("auto")
    assert (chosen.backend, chosen.fs_write, chosen.network) == ("bwrap", True, True)
    assert chosen.landlock_abi == sandbox_module.landlock_abi()


def test_a_bwrap_sandbox_launches_through_the_bwrap_argv_once_per_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    _working_bwrap(monkeypatch)
    sandbox = Sandbox(SandboxConfig(backend="bwrap"))
    policy = SandboxPolicy(mode="read-only")
    launch = sandbox.launch(policy)
    assert launch.prefix == bwrap_prefix("/opt/bwrap", policy)
    assert sandbox.launch(policy) is launch
    sandbox.close()
