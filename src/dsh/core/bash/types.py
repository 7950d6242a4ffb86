"""The bash vocabulary (SPEC §9): what a caller asks for and what an executor reports.

These are in-process objects, never wire JSON, so they are dataclasses with Python
names. Times are milliseconds. ``exit_code`` and ``signal`` are ``None`` when they do
not apply (a signal-killed process has no exit code, a normal exit has no signal).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal, TypeAlias

from msgspec import Struct

from dsh.core.approval import PermissionMode
from dsh.kernel import AbortSignal

BashTaskStatus: TypeAlias = Literal["running", "completed", "killed"]
"""``running`` until the process closes; ``killed`` when stopped by ``kill``, an abort or disposal."""


SandboxBackend: TypeAlias = Literal["bwrap", "landlock", "none"]
"""What confines commands: bubblewrap, Landlock, or nothing."""

ConfinedMode: TypeAlias = Literal["read-only", "workspace-write"]
"""The permission modes a sandbox confines (``full-access`` runs unconfined)."""


class SandboxPolicy(Struct, frozen=True, rename="camel"):
    """How one command is confined: ``mode`` and, under ``workspace-write``, the
    directories it may write beneath (absolute real paths, in order: the workspace,
    extra directories, the temp directories). Everything else is read-only; under
    ``read-only`` nothing is writable but ``/dev/null`` and the network is cut."""

    mode: ConfinedMode
    writable: tuple[str, ...] = ()


class SandboxSupport(Struct, frozen=True, rename="camel"):
    """What the OS sandbox of a bash executor really enforces on this machine (probed).

    ``backend`` is the one in use; ``fs_write`` is True when writes outside the
    writable directories are refused by the kernel; ``network`` when ``read-only``
    commands are cut off the network (bubblewrap: a fresh network namespace;
    Landlock ABI 4+: TCP bind and connect only); ``landlock_abi`` is the kernel's
    Landlock ABI (0: none); ``detail`` says in words what was found and why.
    """

    backend: SandboxBackend = "none"
    fs_write: bool = False
    network: bool = False
    landlock_abi: int = 0
    detail: str = "no sandbox"

    def covers(self, mode: PermissionMode) -> bool:
        """True when bash commands under ``mode`` are confined by the kernel to what the
        mode allows on the file system; ``full-access`` confines nothing (False)."""
        return mode != "full-access" and self.fs_write


UNCONFINED = SandboxSupport()
"""The support of an executor without a sandbox."""


@dataclass(frozen=True)
class BashExecRequest:
    """What a model or plugin asks for; :meth:`BashExecutor.resolve` fills the gaps.

    ``workdir`` and ``timeout_ms`` left ``None`` mean "the executor's default";
    ``signal`` (when given) stops the command when it fires. ``agent`` is the asking
    agent (its permission mode decides the sandbox) and ``workspace`` its session's
    working directory (writable under ``workspace-write``); ``None`` when unknown.
    """

    command: str
    workdir: str | None = None
    timeout_ms: float | None = None
    signal: AbortSignal | None = None
    agent: object | None = None
    workspace: str | None = None


@dataclass(frozen=True)
class BashExecSpec:
    """A resolved request: what :meth:`BashExecutor.run` and ``start`` act on.

    ``timeout_ms`` is the effective timeout of ``run``; ``start`` ignores it.
    ``sandbox`` is how the command is confined (None: not at all). ``agent`` is the
    asking agent (the request's): the ``bash/output`` events of a foreground run name it.
    ``spill_dir`` is where the run's spill files go (None: the executor's own place).
    """

    command: str
    workdir: str
    timeout_ms: float
    signal: AbortSignal | None = None
    sandbox: SandboxPolicy | None = None
    agent: object | None = None
    spill_dir: str | None = None


@dataclass(frozen=True)
class CollectedOutput:
    """One output stream as kept in memory.

    ``text`` is the whole stream, or only its tail when ``truncated``; ``spill_path``
    (when set) names a file holding the complete stream, or only its first part when
    ``spill_truncated`` (the spill file reached its size cap).
    """

    text: str
    truncated: bool
    spill_path: str | None = None
    spill_truncated: bool = False


@dataclass(frozen=True)
class BashRunResult:
    """How a foreground run ended.

    A non-zero exit, a timeout (``timed_out``) and an abort (``aborted``) are
    results, not errors. ``timeout_ms`` is the effective timeout that applied.
    """

    exit_code: int | None
    signal: str | None
    timed_out: bool
    aborted: bool
    timeout_ms: float
    stdout: CollectedOutput
    stderr: CollectedOutput


@dataclass(eq=False)
class BashTask:
    """A background command. The executor owns and updates it; callers only read it.

    ``done`` resolves (never raises) once the process has closed, the final status,
    ``exit_code`` and ``signal`` are recorded and the ``on_task_done`` listeners have
    run. Await it through ``asyncio.shield`` when a timeout might cancel the wait.
    """

    id: str
    command: str
    done: asyncio.Future[None]
    status: BashTaskStatus = "running"
    exit_code: int | None = None
    signal: str | None = None


@dataclass(frozen=True)
class BashTaskRead:
    """An incremental read of a background task's output.

    ``delta`` is the output produced since the previous read (stderr under a
    ``[stderr]`` marker); ``lossy`` is True when some of it was dropped from memory
    before this read, in which case the spill paths (when known) hold everything.
    """

    task: BashTask
    delta: str
    lossy: bool
    stdout_spill_path: str | None = None
    stderr_spill_path: str | None = None
