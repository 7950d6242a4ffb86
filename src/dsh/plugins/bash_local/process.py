"""One ``bash -c`` subprocess with bounded capture and group-wide kills (SPEC §9b ``runBash``).

The command runs in a new session, hence its own process group, so one signal to the
group reaches every child and grandchild. Stopping (a timeout, an abort, ``kill()``)
sends SIGTERM to the group and SIGKILL after a grace period; once the command has
closed after a stop, a last SIGKILL sweeps any group member that ignored SIGTERM.
Output is read in bounded chunks into :class:`OutputCollector` tails, so memory stays
bounded whatever the command prints.

A model may run hundreds of commands, so each is watched with event-loop readers
only: one per pipe, and one on a pidfd that turns readable when the process exits
(``subprocess.Popen`` plus ``loop.add_reader``). That costs half the CPU of asyncio's
subprocess support, whose child watcher (on 3.11) starts a thread per process and
which gives each pipe a transport, a protocol and a stream reader. Where pidfds are
unavailable (not Linux, or a kernel before 5.3) a worker thread waits for the exit
instead. The environment (see :mod:`dsh.plugins.bash_local.env`) and the path of
``bash`` are computed once per state of ``os.environ``, not per command.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal as signals
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dsh.core.bash import BashRunResult
from dsh.core.errors import HarnessError
from dsh.kernel import AbortSignal
from dsh.plugins.bash_local.collector import OutputCollector
from dsh.plugins.bash_local.env import ChildEnv
from dsh.plugins.bash_local.reaper import Reaper
from dsh.plugins.bash_local.sandbox import Launch
from dsh.plugins.bash_local.watch import PipeWatch, pipe_holders

_DEFAULT_ENV = ChildEnv()
"""The environment of commands started without a policy of their own."""

OutputListener = Callable[[str, bytes], object]
"""``on_output(stream, chunk)``: a chunk of ``stdout`` or ``stderr``, as read."""


def _tagged(listener: OutputListener | None, stream: str) -> Callable[[bytes], object] | None:
    if listener is None:
        return None
    return lambda chunk: listener(stream, chunk)


def kill_group(pid: int, sig: int) -> None:
    """Send ``sig`` to process group ``pid``; never raises (a vanished group is fine)."""
    if pid <= 0:
        return
    with contextlib.suppress(Exception):
        os.killpg(pid, sig)


def signal_name(number: int) -> str:
    """``SIGTERM`` for 15; ``SIG<n>`` for a number without a name."""
    try:
        return signals.Signals(number).name
    except ValueError:
        return f"SIG{number}"


@dataclass
class BashInternals:
    """How commands are stopped and spilled: the SIGTERM→SIGKILL grace, the pipe grace,
    where spill files go and how large each may grow (None: unbounded).

    ``pipe_grace_ms`` is how long a command's result waits, after bash has exited, for
    pipes that something else (a background or escaped grandchild) still holds open.
    The executor fills ``spill_dir`` and ``max_spill_bytes``; tests turn the rest.
    """

    grace_ms: float = 3000
    pipe_grace_ms: float = 500
    spill_dir: str | None = None
    max_spill_bytes: int | None = None


def _spawn_error(error: OSError | ValueError, cwd: str, sandbox: Launch | None = None) -> HarnessError:
    if isinstance(error, ValueError):
        return HarnessError(
            f"cannot spawn bash: {error} (remove NUL characters from the command and workdir)",
            "INVALID_COMMAND",
        )
    code = errno.errorcode.get(error.errno or 0, "EUNKNOWN")
    if error.filename == cwd:
        hint = f'check that the workdir "{cwd}" exists and is a directory'
    elif sandbox is not None and error.filename == sandbox.prefix[0]:
        hint = "the sandbox program cannot be run: reinstall it or change the sandbox backend"
    else:
        hint = "check that bash is installed and on PATH"
    return HarnessError(f"spawn bash {code}: {error.strerror}: {error.filename!r} ({hint})", code)


def run_bash(
    command: str,
    *,
    cwd: str,
    timeout_ms: float,
    max_output_bytes: int,
    signal: AbortSignal | None = None,
    internals: BashInternals | None = None,
    env: ChildEnv | None = None,
    reaper: Reaper | None = None,
    sandbox: Launch | None = None,
    spill_dir: str | None = None,
    on_output: OutputListener | None = None,
) -> RunningBash:
    """Start ``bash -c command`` in ``cwd`` and return the handle at once.

    ``timeout_ms`` of 0 means no timeout. ``env`` decides the environment (default: the
    built-in allowlist); ``reaper`` (optional) is told about the process group so it
    dies with dsh; ``sandbox`` (optional) starts bash confined through its launcher.
    ``spill_dir`` overrides ``internals.spill_dir`` for this command's spill files;
    ``on_output(stream, chunk)`` (optional) sees every chunk read, as it is read.
    Raises synchronously (nothing spawned) when ``signal`` has already fired; spawn
    failures surface through
    :attr:`RunningBash.done` instead. Must be called with a running event loop.
    """
    if signal is not None and signal.aborted:
        reason = signal.reason if signal.reason is not None else "aborted"
        raise HarnessError(f"aborted before spawn: {reason}", "ABORTED")
    launch = env if env is not None else _DEFAULT_ENV
    knobs = internals or BashInternals()
    return RunningBash(
        command, cwd, timeout_ms, max_output_bytes, signal, knobs, launch, reaper, sandbox, spill_dir, on_output
    )


class RunningBash:
    """A started command. The handle owns the process group until it is released.

    The process *closes* when bash has exited and both pipes have reached EOF, or the
    pipe grace has passed since the exit (a grandchild holding a pipe open does not
    hold the result). After a stop, closing also SIGKILLs the group and every process
    still holding its pipes (an escaped ``setsid`` grandchild). After a normal exit,
    background members of the group may live on (``cmd &``): :attr:`lingering` tells,
    and :meth:`release` kills them. Nothing needs to be awaited for the process to be
    reaped; if the event loop cancels the watcher (shutdown), everything is killed and
    reaped before the cancellation proceeds.
    """

    def __init__(
        self,
        command: str,
        cwd: str,
        timeout_ms: float,
        max_output_bytes: int,
        signal: AbortSignal | None,
        internals: BashInternals,
        env: ChildEnv,
        reaper: Reaper | None = None,
        sandbox: Launch | None = None,
        spill_dir: str | None = None,
        on_output: OutputListener | None = None,
    ) -> None:
        self._env = env
        self._sandbox = sandbox
        self._reaper = reaper
        self._pipe_grace_s = internals.pipe_grace_ms / 1000
        self._watch: PipeWatch | None = None
        self._released = False
        spill = (spill_dir if spill_dir is not None else internals.spill_dir, internals.max_spill_bytes)
        self.stdout = OutputCollector(max_output_bytes, "stdout", *spill, on_chunk=_tagged(on_output, "stdout"))
        self.stderr = OutputCollector(max_output_bytes, "stderr", *spill, on_chunk=_tagged(on_output, "stderr"))
        self.pid: int | None = None
        self.timed_out = False
        self.aborted = False
        self._grace_s = internals.grace_ms / 1000
        self._stopping = False
        self._closed = False
        self._loop = asyncio.get_running_loop()
        self._timers: list[asyncio.TimerHandle] = []
        self._spawned: asyncio.Future[int | None] = self._loop.create_future()
        self._unsubscribe = signal.add_callback(self._on_abort) if signal is not None else None
        self._task = self._loop.create_task(self._main(command, cwd, timeout_ms), name=f"bash {command[:40]!r}")
        self._task.add_done_callback(_retrieve)

    # ------------------------------------------------------------------ public
    @property
    def done(self) -> asyncio.Future[BashRunResult]:
        """Resolves with the result once the process has closed; raises a spawn failure.

        Each access returns a fresh shield: cancelling a waiter never stops the watcher.
        """
        return asyncio.shield(self._task)

    @property
    def closed(self) -> bool:
        return self._closed

    async def spawned(self) -> int | None:
        """The process id once spawned, or None if the spawn failed."""
        return await asyncio.shield(self._spawned)

    async def wait_closed(self) -> None:
        """Return once the process has closed (or failed to spawn); never raises."""
        await asyncio.wait([self._task])

    def add_close_callback(self, callback: Callable[[RunningBash], object]) -> None:
        """Call ``callback(self)`` once the process has closed or failed to spawn."""
        self._task.add_done_callback(lambda _task: callback(self))

    @property
    def lingering(self) -> bool:
        """True while something of the command may still run: not closed, a pipe still
        held open, or its process group still has members; False once released."""
        if self._released or self.pid is None:
            return False
        if not self._closed or (self._watch is not None and self._watch.draining):
            return True
        try:
            os.killpg(self.pid, 0)
        except ProcessLookupError:
            return False
        except OSError:  # pragma: no cover - EPERM: the group id now belongs to another user
            return False
        return True

    def release(self) -> None:
        """SIGKILL what is left of the command (its group, the holders of its pipes) and
        close the pipes; idempotent, never raises. Use after :attr:`done` (or to stop
        everything at once, e.g. on a termination signal)."""
        if self._released:
            return
        pid = self.pid
        if pid is None:  # not spawned yet (or never will be): stopped as soon as it exists
            self.kill()
            return
        self._released = True
        kill_group(pid, signals.SIGKILL)
        watch = self._watch
        if watch is not None and watch.draining:
            for holder in pipe_holders(watch.inodes):
                with contextlib.suppress(OSError):
                    os.kill(holder, signals.SIGKILL)
            watch.close_pipes()
        if self._reaper is not None:
            self._reaper.unregister(pid)

    def kill(self) -> None:
        """Stop the command: SIGTERM to its group now, SIGKILL after the grace.

        Idempotent (a second call does not restart the escalation); a no-op once the
        process has closed. Called before the spawn completes, it takes effect at once
        after it.
        """
        if self._stopping or self._closed:
            return
        self._stopping = True
        if self.pid is not None:
            self._terminate(self.pid)

    # ---------------------------------------------------------------- internal
    def _on_abort(self) -> None:
        self.aborted = True
        self.kill()

    def _on_timeout(self) -> None:
        self.timed_out = True
        self.kill()

    def _terminate(self, pid: int) -> None:
        kill_group(pid, signals.SIGTERM)
        self._timers.append(self._loop.call_later(self._grace_s, kill_group, pid, signals.SIGKILL))

    def _settle(self) -> None:
        self._closed = True
        for timer in self._timers:
            timer.cancel()
        if self._unsubscribe is not None:
            self._unsubscribe()

    async def _main(self, command: str, cwd: str, timeout_ms: float) -> BashRunResult:
        if self._reaper is not None:
            self._reaper.prepare()
        try:
            process = _spawn(command, cwd, self._env, self._sandbox)
        except (OSError, ValueError) as error:
            self._settle()
            self._spawned.set_result(None)
            raise _spawn_error(error, cwd, self._sandbox) from error
        pid = self.pid = process.pid
        self._spawned.set_result(pid)
        assert process.stdout is not None  # piped above
        assert process.stderr is not None  # piped above
        pipes = ((process.stdout, self.stdout), (process.stderr, self.stderr))
        watch = self._watch = PipeWatch(self._loop, process, pipes, self._pipe_grace_s)
        if self._reaper is not None:
            self._reaper.register(pid, watch.inodes)
        if self._stopping:
            self._terminate(pid)
        elif timeout_ms > 0:
            self._timers.append(self._loop.call_later(timeout_ms / 1000, self._on_timeout))
        try:
            await asyncio.shield(watch.closed)
        except asyncio.CancelledError:
            # The loop is going away (or someone cancelled the watcher): kill the group,
            # then wait until it has exited and the pipes are drained (the readers are
            # loop callbacks, not tasks, so a shutdown does not stop them).
            kill_group(pid, signals.SIGKILL)
            await asyncio.shield(watch.closed)
            self.release()
            self.stdout.finalize()
            self.stderr.finalize()
            raise
        finally:
            self._settle()
        if self._stopping or not self.lingering:
            self.release()
        code = process.returncode
        assert code is not None  # reaped before closed resolved
        return BashRunResult(
            exit_code=code if code >= 0 else None,
            signal=signal_name(-code) if code < 0 else None,
            timed_out=self.timed_out,
            aborted=self.aborted,
            timeout_ms=timeout_ms,
            stdout=self.stdout.finalize(),
            stderr=self.stderr.finalize(),
        )


def _spawn(command: str, cwd: str, launch: ChildEnv, sandbox: Launch | None = None) -> subprocess.Popen[bytes]:
    """Start ``bash -c command`` in its own session, stdin from /dev/null, output piped;
    with ``sandbox``, through its launcher (which then execs bash).

    Synchronous (fork and exec, as asyncio's subprocess support does too); raises
    ``OSError`` when bash, the launcher or ``cwd`` cannot be used and ``ValueError`` for a NUL.
    """
    env, bash = launch.current()
    argv = ["bash", "-c", command]
    return subprocess.Popen(
        argv if sandbox is None else sandbox.argv(bash or "bash", argv),
        executable=bash if sandbox is None else None,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        pass_fds=() if sandbox is None else sandbox.pass_fds,
    )


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Mark a watcher's failure as seen; callers learn of it through ``done``."""
    if not task.cancelled():
        task.exception()
