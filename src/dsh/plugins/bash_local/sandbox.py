"""The OS sandbox of ``bash-local``: which backend works here, and how one command is confined.

:func:`detect` probes a backend once per process (results are cached): it runs a
real confined command that must write inside a writable directory and fail to
write next to it, so a ``bwrap`` that is installed but cannot create namespaces
(no unprivileged user namespaces, a container) or a kernel with Landlock disabled
is reported as not working, with the reason. ``auto`` takes bubblewrap when it
works (it also cuts the network), else Landlock.

:class:`Sandbox` is one executor's view: its config, the probed support, the
policy of a request (mode, writable directories) and the launch prefix of a
policy. It owns the Landlock ruleset fds it creates, one per policy, until
:meth:`Sandbox.close`.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias

from msgspec import structs
from pydantic import BaseModel, ConfigDict, field_validator

from dsh.core.approval import PermissionMode
from dsh.core.bash import ConfinedMode, SandboxPolicy, SandboxSupport
from dsh.core.errors import HarnessError
from dsh.kernel import ConfigPath
from dsh.plugins.bash_local.bwrap import bwrap_prefix, find_bwrap
from dsh.plugins.bash_local.landlock import create_ruleset, landlock_abi, trampoline_prefix

BackendChoice: TypeAlias = Literal["auto", "bwrap", "landlock"]
"""Which backend a config asks for; ``auto`` prefers bubblewrap."""

PROBE_TIMEOUT_S = 10.0
"""How long a probe command may take before the backend counts as not working."""


class SandboxConfig(BaseModel):
    """``bash-local``'s ``sandbox`` config.

    ``mode`` applies when no ``permissions`` service is loaded (with one, the
    session's mode applies); absent, commands run unconfined. ``backend`` forces
    ``bwrap`` or ``landlock`` (default ``auto``). ``writable`` adds directories that
    ``workspace-write`` commands may write beneath, next to the workspace and the
    temp directory (``~`` and ``$NAME`` expanded; a relative entry resolves against
    the tree file, and is refused in a config built in code).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: PermissionMode | None = None
    backend: BackendChoice = "auto"
    writable: tuple[ConfigPath, ...] = ()

    @field_validator("writable")
    @classmethod
    def _absolute(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for path in value:
            if not os.path.isabs(path):
                raise ValueError(f"sandbox.writable: {path!r} is relative; write it as an absolute path")
        return value


@dataclass(frozen=True)
class Launch:
    """How to start a confined command: the launcher ``prefix``, then the program.

    A launcher that takes ``FILE ARGV...`` (the file to exec, then the program's whole
    argv: the Landlock trampoline) has ``with_argv0``; one that takes ``FILE ARGS...``
    (bubblewrap: argv[0] becomes ``FILE``) has not. ``pass_fds`` must be inherited.
    """

    prefix: tuple[str, ...]
    pass_fds: tuple[int, ...] = ()
    with_argv0: bool = False

    def argv(self, file: str, argv: list[str]) -> list[str]:
        """The launcher's argv that runs ``file`` with ``argv``."""
        return [*self.prefix, file, *(argv if self.with_argv0 else argv[1:])]


def _temp_candidates() -> tuple[str, ...]:
    return (tempfile.gettempdir(), "/tmp")


def temp_dirs() -> tuple[str, ...]:
    """The temp directories commands may write under ``workspace-write``: Python's and ``/tmp``."""
    return _existing(_temp_candidates())


def _existing(paths: tuple[str, ...]) -> tuple[str, ...]:
    """``paths`` as real paths, without duplicates and without those that are not directories."""
    seen: dict[str, None] = {}
    for path in paths:
        real = os.path.realpath(path)
        if os.path.isdir(real):
            seen[real] = None
    return tuple(seen)


# ------------------------------------------------------------------- probing
def _probe_run(launch: Callable[[SandboxPolicy], Launch]) -> str | None:
    """Run a confined write test; None when the sandbox held, else why not."""
    with tempfile.TemporaryDirectory(prefix="dsh-sandbox-probe-") as base:
        inside = os.path.join(base, "inside")
        os.mkdir(inside)
        policy = SandboxPolicy(mode="workspace-write", writable=(os.path.realpath(inside),))
        bash = shutil.which("bash") or "bash"
        script = ': > "$1/in"; : 2>/dev/null > "$2/out"; exit 0'
        try:
            how = launch(policy)
            done = subprocess.run(
                how.argv(bash, ["bash", "-c", script, "probe", inside, base]),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=how.pass_fds,
                timeout=PROBE_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as error:
            return f"{type(error).__name__}: {error}"
        wrote_in = os.path.exists(os.path.join(inside, "in"))
        wrote_out = os.path.exists(os.path.join(base, "out"))
    if wrote_out:
        return "a write outside the writable directory went through"
    if done.returncode != 0 or not wrote_in:
        stderr = done.stderr.decode(errors="replace").strip().splitlines()
        return f"the probe command failed (exit {done.returncode}): {stderr[-1] if stderr else 'no output'}"
    return None


def _bwrap_version(bwrap: str) -> str:
    try:
        done = subprocess.run([bwrap, "--version"], capture_output=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return "bubblewrap"
    return done.stdout.decode(errors="replace").strip() or "bubblewrap"


def probe_bwrap() -> SandboxSupport:
    """What bubblewrap enforces here (a real probe; not cached)."""
    bwrap = find_bwrap()
    if bwrap is None:
        return SandboxSupport(detail="bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)")

    def launch(policy: SandboxPolicy) -> Launch:
        prefix = bwrap_prefix(bwrap, policy)
        return Launch((*prefix[:-1], "--unshare-net", "--"))  # the network namespace must work too

    failure = _probe_run(launch)
    version = _bwrap_version(bwrap)
    if failure is not None:
        return SandboxSupport(detail=f"{version} at {bwrap} does not work here: {failure}")
    return SandboxSupport(backend="bwrap", fs_write=True, network=True, detail=f"{version} at {bwrap}")


def probe_landlock() -> SandboxSupport:
    """What Landlock enforces here (a real probe; not cached)."""
    abi = landlock_abi()
    if abi <= 0:
        return SandboxSupport(detail="Landlock is not available (Linux 5.13+ with Landlock enabled in the LSM list)")
    holder: list[int] = []

    def launch(policy: SandboxPolicy) -> Launch:
        holder.append(create_ruleset(policy, abi))
        return Launch(trampoline_prefix(holder[0]), (holder[0],), with_argv0=True)

    try:
        failure = _probe_run(launch)
    finally:
        for fd in holder:
            os.close(fd)
    network = "TCP cut in read-only" if abi >= 4 else "network not restricted (needs ABI 4)"
    if failure is not None:
        return SandboxSupport(landlock_abi=abi, detail=f"Landlock ABI {abi} does not work here: {failure}")
    return SandboxSupport(
        backend="landlock", fs_write=True, network=abi >= 4, landlock_abi=abi, detail=f"Landlock ABI {abi} ({network})"
    )


_cache: dict[BackendChoice, SandboxSupport] = {}


def detect(choice: BackendChoice = "auto") -> SandboxSupport:
    """The support of ``choice`` on this machine, probed on first use and cached for the process.

    ``auto`` is bubblewrap when it works, else Landlock when it works, else nothing;
    the detail then says why each failed.
    """
    cached = _cache.get(choice)
    if cached is not None:
        return cached
    if choice == "bwrap":
        support = probe_bwrap()
    elif choice == "landlock":
        support = probe_landlock()
    else:
        bwrap = detect("bwrap")
        if bwrap.fs_write:
            support = structs.replace(bwrap, landlock_abi=landlock_abi())
        else:
            landlock = detect("landlock")
            support = landlock
            if not landlock.fs_write:
                support = structs.replace(landlock, detail=f"{bwrap.detail}; {landlock.detail}")
    _cache[choice] = support
    return support


def forget_probes() -> None:
    """Drop the cached probe results (the next :func:`detect` probes again)."""
    _cache.clear()


def platform_line() -> str:
    """``Linux 6.1.0 x86_64``: where the probes ran."""
    return f"{platform.system()} {platform.release()} {platform.machine()}"


# ------------------------------------------------------------------ per executor
READ_ONLY = SandboxPolicy(mode="read-only")
"""The one ``read-only`` policy (nothing writable)."""


class Sandbox:
    """One executor's sandbox: see the module docstring. Not thread-safe (event-loop use)."""

    def __init__(self, config: SandboxConfig) -> None:
        self.config = config
        self._support: SandboxSupport | None = None
        self._rulesets: dict[SandboxPolicy, int] = {}
        self._launches: dict[SandboxPolicy, Launch] = {}
        self._writable: dict[str, SandboxPolicy] = {}

    def support(self) -> SandboxSupport:
        """The probed support of the configured backend (the first call probes, once per process)."""
        if self._support is None:
            self._support = detect(self.config.backend)
        return self._support

    def policy(self, mode: ConfinedMode, workspace: str, *, required: bool) -> SandboxPolicy | None:
        """The policy of a command under ``mode`` whose session works in ``workspace``.

        The writable directories of a workspace are resolved (real paths, existing
        ones only) on first use and kept once all of them exist; until then each call
        looks again, so a directory created later is picked up.

        None when no backend works and the caller does not require one (the
        permissions policy then asks before bash runs). Raises
        ``SANDBOX_UNAVAILABLE`` when a sandbox is ``required`` and none works.
        """
        support = self.support()
        if not support.fs_write:
            if not required:
                return None
            raise HarnessError(
                f"bash-local: sandbox mode {mode} is configured but no sandbox works here ({support.detail}): "
                "install bubblewrap, or set sandbox.mode to full-access to run commands unconfined",
                "SANDBOX_UNAVAILABLE",
            )
        if mode == "read-only":
            return READ_ONLY
        policy = self._writable.get(workspace)
        if policy is None:
            wanted = (workspace, *self.config.writable, *_temp_candidates())
            policy = SandboxPolicy(mode="workspace-write", writable=_existing(wanted))
            if len(policy.writable) == len(set(map(os.path.realpath, wanted))):  # all there: keep it
                self._writable[workspace] = policy
        return policy

    def launch(self, policy: SandboxPolicy) -> Launch:
        """How to start a command under ``policy`` (cached per policy).

        Raises ``SANDBOX_UNAVAILABLE`` when the ruleset cannot be built.
        """
        launch = self._launches.get(policy)
        if launch is not None:
            return launch
        support = self.support()
        if support.backend == "bwrap":
            bwrap = find_bwrap() or "bwrap"
            launch = Launch(bwrap_prefix(bwrap, policy))
        else:
            try:
                ruleset = create_ruleset(policy, support.landlock_abi)
            except OSError as error:
                raise HarnessError(
                    f"bash-local: cannot build the Landlock ruleset: {error.strerror}: {error.filename or policy}",
                    "SANDBOX_UNAVAILABLE",
                ) from error
            self._rulesets[policy] = ruleset
            launch = Launch(trampoline_prefix(ruleset), (ruleset,), with_argv0=True)
        self._launches[policy] = launch
        return launch

    def close(self) -> None:
        """Close the Landlock rulesets; idempotent (commands started already keep theirs)."""
        self._launches.clear()
        for fd in self._rulesets.values():
            os.close(fd)
        self._rulesets.clear()
