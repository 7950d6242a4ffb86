"""The bash vocabulary (SPEC §9): what a caller asks for and what an executor reports.

These are in-process objects, never wire JSON, so they are dataclasses with Python
names. Times are milliseconds. ``exit_code`` and ``signal`` are ``None`` when they do
not apply (a signal-killed process has no exit code, a normal exit has no signal).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal, TypeAlias

from dsh.kernel import AbortSignal

BashTaskStatus: TypeAlias = Literal["running", "completed", "killed"]
"""``running`` until the process closes; ``killed`` when stopped by ``kill``, an abort or disposal."""


@dataclass(frozen=True)
class BashExecRequest:
    """What a model or plugin asks for; :meth:`BashExecutor.resolve` fills the gaps.

    ``workdir`` and ``timeout_ms`` left ``None`` mean "the executor's default";
    ``signal`` (when given) stops the command when it fires.
    """

    command: str
    workdir: str | None = None
    timeout_ms: float | None = None
    signal: AbortSignal | None = None


@dataclass(frozen=True)
class BashExecSpec:
    """A resolved request: what :meth:`BashExecutor.run` and ``start`` act on.

    ``timeout_ms`` is the effective timeout of ``run``; ``start`` ignores it.
    """

    command: str
    workdir: str
    timeout_ms: float
    signal: AbortSignal | None = None


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
