"""Watching one started command: its pipes, its exit, and whoever else still holds its pipes.

:class:`PipeWatch` drains the pipes into collectors and reaps the process from event-loop
callbacks only. A grandchild may keep a pipe open long after bash has exited (``cmd &``,
``setsid cmd &``); the watch does not wait for it: once the process has exited and a
short grace has passed, :attr:`PipeWatch.closed` resolves anyway. The pipes that are
still open go on being drained (into nothing, so a writer never blocks or gets SIGPIPE)
until they reach end of file or :meth:`PipeWatch.close_pipes` is called.

:func:`pipe_holders` finds the processes that hold given pipes open (Linux ``/proc``), so
an escaped grandchild can be found and stopped with its command.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
from typing import IO

from dsh.plugins.bash_local.collector import OutputCollector

CHUNK_BYTES = 64 * 1024
"""The most read from a pipe at once."""


class PipeWatch:
    """Drains a started process's pipes into collectors and reaps it.

    :attr:`closed` resolves once the process has exited and been reaped
    (``process.returncode`` is set) and either every pipe has reached end of file (a
    read error counts as its end; the pipe is then closed) or ``grace_s`` seconds have
    passed since the exit; from then on nothing more reaches the collectors.
    :attr:`draining` tells whether some pipe is still open. Nothing here is a task, so
    nothing is cancelled when the loop shuts down.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        process: subprocess.Popen[bytes],
        pipes: tuple[tuple[IO[bytes], OutputCollector], ...],
        grace_s: float,
    ) -> None:
        self.closed: asyncio.Future[None] = loop.create_future()
        self.inodes = tuple(os.fstat(pipe.fileno()).st_ino for pipe, _ in pipes)
        self._loop = loop
        self._process = process
        self._grace_s = grace_s
        self._open: dict[int, IO[bytes]] = {}
        self._exited = False
        self._timer: asyncio.TimerHandle | None = None
        for pipe, collector in pipes:
            self._open[pipe.fileno()] = pipe
            loop.add_reader(pipe.fileno(), self._read, pipe, collector)
        try:
            pidfd = os.pidfd_open(process.pid)
        except (AttributeError, OSError):  # no pidfds on this system: a worker thread waits
            loop.run_in_executor(None, process.wait).add_done_callback(self._waited)
        else:
            loop.add_reader(pidfd, self._on_pidfd, pidfd)

    @property
    def draining(self) -> bool:
        """True while some pipe is still open (held by a process that outlived the command)."""
        return bool(self._open)

    def close_pipes(self) -> None:
        """Stop reading and close every pipe still open; idempotent."""
        for fd, pipe in tuple(self._open.items()):
            self._close(fd, pipe)
        self._settle()

    def _read(self, pipe: IO[bytes], collector: OutputCollector) -> None:
        fd = pipe.fileno()
        try:
            chunk = os.read(fd, CHUNK_BYTES)  # the loop saw it readable: this does not block
        except OSError:
            chunk = b""
        if chunk:
            if not self.closed.done():
                collector.push(chunk)
            return
        self._close(fd, pipe)
        self._settle()

    def _close(self, fd: int, pipe: IO[bytes]) -> None:
        del self._open[fd]
        self._loop.remove_reader(fd)
        pipe.close()

    def _on_pidfd(self, pidfd: int) -> None:
        self._loop.remove_reader(pidfd)
        os.close(pidfd)
        self._process.poll()
        self._on_exit()

    def _waited(self, _wait: asyncio.Future[int]) -> None:
        self._on_exit()

    def _on_exit(self) -> None:
        self._exited = True
        if self._open:
            self._timer = self._loop.call_later(self._grace_s, self._give_up)
        self._settle()

    def _give_up(self) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    def _settle(self) -> None:
        if self._exited and not self._open:
            if self._timer is not None:
                self._timer.cancel()
            self._give_up()


def pipe_holders(inodes: tuple[int, ...]) -> set[int]:
    """The pids (other than ours) of the processes that have one of the pipes ``inodes`` open.

    Reads ``/proc/<pid>/fd``; processes that cannot be inspected (another user's, or
    gone meanwhile) are skipped. Empty where there is no ``/proc``.
    """
    if not inodes:
        return set()
    wanted = {f"pipe:[{inode}]" for inode in inodes}
    own = os.getpid()
    holders: set[int] = set()
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == own:
                continue
            if _holds(f"/proc/{entry.name}/fd", wanted):
                holders.add(int(entry.name))
    return holders


def _holds(fd_dir: str, wanted: set[str]) -> bool:
    try:
        names = os.listdir(fd_dir)
    except OSError:
        return False
    for name in names:
        with contextlib.suppress(OSError):
            if os.readlink(f"{fd_dir}/{name}") in wanted:
                return True
    return False
