"""``bash-local``: the :class:`~dsh.core.bash.BashExecutor` that runs local subprocesses (SPEC §9b)."""

from __future__ import annotations

import asyncio
import codecs
import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from dsh.core.approval import PERMISSIONS, PermissionMode
from dsh.core.bash import (
    BASH_OUTPUT,
    BashExecRequest,
    BashExecSpec,
    BashExecutor,
    BashRunResult,
    BashTask,
    BashTaskRead,
    SandboxPolicy,
    SandboxSupport,
)
from dsh.core.errors import HarnessError
from dsh.kernel import ConfigPath, Context
from dsh.plugins.bash_local.env import ChildEnv, EnvPolicy
from dsh.plugins.bash_local.process import BashInternals, OutputListener, RunningBash, run_bash
from dsh.plugins.bash_local.reaper import Reaper
from dsh.plugins.bash_local.sandbox import Sandbox, SandboxConfig
from dsh.plugins.bash_local.spill import bash_spill_dir, prune_spills


def is_positive_finite(value: object) -> bool:
    """True for an int or float (not a bool) that is finite and greater than zero."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _tidy(value: float) -> float:
    """``120000.0`` → ``120000`` so timeouts print the way they were written."""
    return int(value) if float(value).is_integer() else value


class LocalBashConfig(BaseModel):
    """``bash-local`` config; YAML keys are camelCase (``timeoutMs``), snake_case also accepted.

    ``cwd`` is the default workdir (the process's working directory at resolve time
    when absent); ``timeoutMs`` the default foreground timeout, capped by
    ``maxTimeoutMs``; ``maxOutputBytes`` the in-memory tail kept per stream;
    ``maxSpillBytes`` the size cap of each spill file (the whole stream of a long
    output). ``sessionFiles`` is the root of the per-session folders: the spill files
    of a call made by an agent of session S go to
    ``<sessionFiles>/_session-files/<S>/bash/`` (:mod:`~dsh.plugins.bash_local.spill`),
    where they outlive the process (the model may read them on a resumed turn) and
    ``maxSessionSpillBytes`` caps that folder's total (oldest files removed first, after
    each command). Without it, or for a call without a session, spill files go to a
    directory of the executor's own that disposal removes.
    ``envAllow`` names more variables of dsh's environment that commands inherit
    (exact names, or ``PREFIX*``) beyond the built-in allowlist; ``env`` sets fixed
    values. Nothing else of dsh's environment reaches a command. ``sandbox`` is the
    OS sandbox (:class:`~dsh.plugins.bash_local.sandbox.SandboxConfig`).
    ``cwd``, ``sessionFiles`` and ``sandbox.writable`` are :data:`~dsh.kernel.ConfigPath`
    values: ``~`` and ``$NAME`` expanded, a relative one resolved against the tree file.
    """

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    cwd: ConfigPath | None = None
    timeout_ms: float = Field(120_000, alias="timeoutMs")
    max_timeout_ms: float = Field(600_000, alias="maxTimeoutMs")
    max_output_bytes: float = Field(64_000, alias="maxOutputBytes")
    max_spill_bytes: float = Field(100_000_000, alias="maxSpillBytes")
    session_files: ConfigPath | None = Field(None, alias="sessionFiles")
    max_session_spill_bytes: float = Field(500_000_000, alias="maxSessionSpillBytes")
    env_allow: tuple[str, ...] = Field((), alias="envAllow")
    env: dict[str, str] = Field(default_factory=dict)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)

    @field_validator(
        "timeout_ms", "max_timeout_ms", "max_output_bytes", "max_spill_bytes", "max_session_spill_bytes", mode="before"
    )
    @classmethod
    def _positive_finite(cls, value: object, info: ValidationInfo) -> object:
        if not is_positive_finite(value):
            alias = cls.model_fields[str(info.field_name)].alias
            raise ValueError(f"bash-local: {alias} must be a positive finite number")
        return value


@dataclass(eq=False)
class _TaskEntry:
    task: BashTask
    process: RunningBash
    stdout_offset: int = 0
    stderr_offset: int = 0


class LocalBashExecutor(BashExecutor):
    """Runs ``bash -c`` per call, each in its own process group.

    Background tasks get ids ``bash-1``, ``bash-2``, … per executor. The executor owns
    every process group it started until the group is gone: what a finished command
    left running (``cmd &``) is killed at disposal or by :meth:`kill_all`, and a
    :class:`Reaper` kills it all if dsh itself dies without cleaning up (SIGKILL).
    Disposing the plugin's fiber kills every process still running (foreground runs
    included) and returns only once they have all exited, SIGKILL escalation included;
    completions caused by that teardown are not announced. ``internals`` is the test
    seam (SIGKILL grace, pipe grace, spill directory). Spill files of a call with a
    session go to that session's folder when ``sessionFiles`` is set (see
    :class:`LocalBashConfig`), else to :attr:`spill_dir`, a private directory (0700)
    the executor creates and removes at disposal (the reaper removes it if dsh is killed).

    Each command is confined by the OS sandbox of its mode (:meth:`resolve` decides):
    the asking agent's mode from the ``permissions`` service when one is loaded
    (``read-only`` in plan mode), else ``sandbox.mode`` of the config, else none. Where
    no sandbox works, a mode from the permissions service runs commands unconfined
    (that service asks before bash runs, as :meth:`sandbox_support` tells it), and a
    mode from the config fails closed (``SANDBOX_UNAVAILABLE``).
    """

    name = "bash-local"
    Config = LocalBashConfig

    def __init__(self, ctx: Context, config: LocalBashConfig) -> None:
        super().__init__(ctx)
        self.config = config
        self.spill_dir = tempfile.mkdtemp(prefix="dsh-bash-")
        self.internals = BashInternals(spill_dir=self.spill_dir, max_spill_bytes=math.ceil(config.max_spill_bytes))
        self._max_bytes = math.ceil(config.max_output_bytes)
        self._tasks: dict[str, _TaskEntry] = {}
        self._count = 0
        self._processes: set[RunningBash] = set()
        self._lingering: set[RunningBash] = set()
        self.reaper = Reaper(cleanup=(self.spill_dir,))
        name, value = self.reaper.marker
        self.child_env = ChildEnv(EnvPolicy(config.env_allow, {**config.env, name: value}))
        self.sandbox = Sandbox(config.sandbox)
        self._watchers: set[asyncio.Task[None]] = set()
        self._disposed = False
        ctx.effect(lambda: self._teardown, "bash-local teardown")

    # ---------------------------------------------------------------- requests
    def resolve(self, request: BashExecRequest) -> BashExecSpec:
        """Apply defaults: timeout capped at ``maxTimeoutMs``; workdir request → config → cwd;
        the sandbox policy of the request's mode (the workspace: the request's, else
        the config's ``cwd``, else the process's working directory). Raises
        ``SANDBOX_UNAVAILABLE`` when a configured sandbox cannot be used."""
        requested = request.timeout_ms
        if requested is not None and not is_positive_finite(requested):
            raise HarnessError("bash-local: request.timeoutMs must be a positive finite number", "INVALID_TIMEOUT")
        config = self.config
        timeout = min(requested if requested is not None else config.timeout_ms, config.max_timeout_ms)
        workdir = request.workdir if request.workdir is not None else config.cwd
        return BashExecSpec(
            command=request.command,
            workdir=workdir if workdir is not None else os.getcwd(),
            timeout_ms=_tidy(timeout),
            signal=request.signal,
            sandbox=self._policy(request),
            agent=request.agent,
            spill_dir=self._session_spill_dir(request.agent),
        )

    def _session_spill_dir(self, agent: object | None) -> str | None:
        root = self.config.session_files
        session_id = getattr(getattr(agent, "session", None), "id", None)
        if root is None or not isinstance(session_id, str) or not session_id:
            return None
        return bash_spill_dir(os.path.abspath(root), session_id)

    def _policy(self, request: BashExecRequest) -> SandboxPolicy | None:
        permissions = self.ctx.get(PERMISSIONS)
        mode: PermissionMode | None
        if permissions is not None:
            state = permissions.state(request.agent)
            mode = "read-only" if state.plan else state.mode
        else:
            mode = self.config.sandbox.mode
        if mode is None or mode == "full-access":
            return None
        workspace = request.workspace or self.config.cwd or os.getcwd()
        policy = self.sandbox.policy(mode, workspace, required=permissions is None)
        if policy is not None:
            self.sandbox.launch(policy)  # build it now: a broken sandbox fails the request, not the spawn
        return policy

    def sandbox_support(self) -> SandboxSupport:
        """What the configured backend enforces here (probed on the first call, once per process)."""
        return self.sandbox.support()

    async def run(self, spec: BashExecSpec) -> BashRunResult:
        """See :meth:`BashExecutor.run`; cancelling the caller kills the command.

        While it runs, what it prints is emitted as ``bash/output`` events (when anyone listens).
        """
        process = self._launch(spec, spec.timeout_ms, self._live_output(spec.agent))
        try:
            return await process.done
        except asyncio.CancelledError:
            process.kill()
            raise

    def _live_output(self, agent: object | None) -> OutputListener | None:
        """The ``on_output`` of a foreground run: decode each stream and emit ``bash/output``."""
        ctx = self.ctx
        if ctx.listener_count(BASH_OUTPUT) == 0:
            return None
        decoders = {stream: codecs.getincrementaldecoder("utf-8")("replace") for stream in ("stdout", "stderr")}

        def deliver(stream: str, chunk: bytes) -> None:
            piece = decoders[stream].decode(chunk)
            if not piece:
                return
            try:
                ctx.emit(BASH_OUTPUT, agent, stream, piece)
            except Exception as error:
                ctx.logger.warning("bash-local: a bash/output listener failed: %s", error)

        return deliver

    def start(self, spec: BashExecSpec) -> BashTask:
        """See :meth:`BashExecutor.start`; raises only for a pre-aborted signal or after disposal."""
        process = self._launch(spec, 0)
        self._count += 1
        task = BashTask(id=f"bash-{self._count}", command=spec.command, done=asyncio.get_running_loop().create_future())
        entry = _TaskEntry(task, process)
        self._tasks[task.id] = entry
        watcher = asyncio.get_running_loop().create_task(self._finish(entry), name=f"bash task {task.id}")
        self._watchers.add(watcher)
        watcher.add_done_callback(self._watchers.discard)
        return task

    def _launch(self, spec: BashExecSpec, timeout_ms: float, on_output: OutputListener | None = None) -> RunningBash:
        if self._disposed:
            raise HarnessError("bash-local is disposed: load the bash-local plugin again to run commands", "DISPOSED")
        self._prune()
        sandbox = spec.sandbox
        process = run_bash(
            spec.command,
            cwd=spec.workdir,
            timeout_ms=timeout_ms,
            max_output_bytes=self._max_bytes,
            signal=spec.signal,
            internals=self.internals,
            env=self.child_env,
            reaper=self.reaper,
            sandbox=self.sandbox.launch(sandbox) if sandbox is not None else None,
            spill_dir=spec.spill_dir,
            on_output=on_output,
        )
        self._processes.add(process)
        spill_dir = spec.spill_dir
        process.add_close_callback(
            self._on_closed if spill_dir is None else lambda closed: self._on_closed(closed, spill_dir)
        )
        return process

    def _on_closed(self, process: RunningBash, spill_dir: str | None = None) -> None:
        self._processes.discard(process)
        if process.lingering:
            self._lingering.add(process)
        if spill_dir is None:
            return
        keep = {path for path in (process.stdout.spill_path, process.stderr.spill_path) if path is not None}
        if keep:  # the folder grew: back under its total cap, this command's files kept
            prune_spills(spill_dir, math.ceil(self.config.max_session_spill_bytes), keep)

    def _prune(self) -> None:
        for process in [process for process in self._lingering if not process.lingering]:
            self._lingering.discard(process)
            process.release()

    async def _finish(self, entry: _TaskEntry) -> None:
        task = entry.task
        try:
            outcome = await entry.process.done
        except Exception as error:
            task.status = "killed"
            entry.process.stderr.push(f"spawn failed: {type(error).__name__}: {error}".encode())
        else:
            if task.status == "running":
                task.status = "killed" if outcome.aborted else "completed"
            task.exit_code = outcome.exit_code
            task.signal = outcome.signal
        self.notify_task_done(task)
        task.done.set_result(None)

    # ------------------------------------------------------------------- tasks
    def get(self, task_id: str) -> BashTask | None:
        entry = self._tasks.get(task_id)
        return entry.task if entry is not None else None

    def list(self) -> list[BashTask]:
        return [entry.task for entry in self._tasks.values()]

    def process(self, task_id: str) -> RunningBash | None:
        """The process behind a task (diagnostics and tests), or None for an unknown id."""
        entry = self._tasks.get(task_id)
        return entry.process if entry is not None else None

    def _entry(self, task_id: str) -> _TaskEntry:
        entry = self._tasks.get(task_id)
        if entry is None:
            raise HarnessError(f'unknown bash task "{task_id}"', "UNKNOWN_TASK")
        return entry

    def read_output(self, task_id: str) -> BashTaskRead:
        """Output since the last read; stderr follows a ``[stderr]`` line (see SPEC §9b)."""
        entry = self._entry(task_id)
        out = entry.process.stdout.read_from(entry.stdout_offset)
        err = entry.process.stderr.read_from(entry.stderr_offset)
        entry.stdout_offset = out.next_offset
        entry.stderr_offset = err.next_offset
        delta = out.text
        if err.text:
            separator = "\n" if out.text and not out.text.endswith("\n") else ""
            delta = f"{out.text}{separator}[stderr]\n{err.text}"
        return BashTaskRead(
            task=entry.task,
            delta=delta,
            lossy=out.lossy or err.lossy,
            stdout_spill_path=out.spill_path,
            stderr_spill_path=err.spill_path,
        )

    def kill(self, task_id: str) -> bool:
        entry = self._entry(task_id)
        if entry.task.status != "running":
            return False
        entry.task.status = "killed"
        entry.process.kill()
        return True

    @property
    def owned_groups(self) -> int:
        """How many process groups the executor still owns: running commands plus what
        finished commands left running (counted until the next command notices it is gone)."""
        return len(self._processes) + len(self._lingering)

    # ---------------------------------------------------------------- teardown
    def kill_all(self) -> int:
        """SIGKILL every process group this executor still owns, at once (for signal handlers).

        Synchronous and never raises; running commands then close as killed (their
        results and task completions, status ``killed``, follow as usual). Returns how
        many groups were hit.
        """
        owned = [*self._processes, *self._lingering]
        self._lingering.clear()
        for entry in self._tasks.values():
            if entry.task.status == "running":
                entry.task.status = "killed"
        for process in owned:
            process.release()
        return len(owned)

    async def _teardown(self) -> None:
        self._disposed = True
        for entry in self._tasks.values():
            if entry.task.status == "running":
                entry.task.status = "killed"
        self._tasks.clear()
        processes = list(self._processes)
        for process in processes:
            process.kill()
        waits: list[Any] = [process.wait_closed() for process in processes]
        waits.extend(self._watchers)
        await asyncio.gather(*waits)
        for process in [*processes, *self._lingering]:
            process.release()
        self._lingering.clear()
        self.reaper.close()
        self.sandbox.close()
        shutil.rmtree(self.spill_dir, ignore_errors=True)
