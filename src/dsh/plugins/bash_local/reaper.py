"""A watchdog that kills the commands of a dsh process that died without cleaning up.

dsh may be SIGKILLed (or crash) while commands run; their process groups would live on.
:class:`Reaper` starts, on first use, one small helper process (in its own session, so
terminal signals do not reach it) and tells it over a pipe which process groups are
live, with the inodes of their output pipes. When dsh dies, the kernel closes that pipe;
the helper reads end of file, SIGKILLs every group still registered, every process
still holding one of their pipes (grandchildren that left the group with ``setsid``)
and every process whose environment carries the owner's marker (:attr:`Reaper.marker`,
``DSH_BASH_OWNER=<random>``, set in every command's environment: this also covers a
command that dsh had no time to register), removes the owner's spill directory, and
exits. Closing the reaper (:meth:`Reaper.close`) ends the helper the same way: the
owner kills and unregisters its groups first, and the helper's sweep then catches any
marked process that escaped them (a daemonized ``setsid cmd >/dev/null &``).
"""

from __future__ import annotations

import contextlib
import secrets
import subprocess
import sys
from typing import IO

MARKER_NAME = "DSH_BASH_OWNER"
"""The environment variable that marks a process as started by one executor."""

REAPER_SOURCE = """
import os, shutil, signal, sys
marker = sys.argv[1].encode()
groups = {}
for line in sys.stdin:
    words = line.split()
    if len(words) >= 2 and words[0] == "+":
        groups[int(words[1])] = words[2:]
    elif len(words) == 2 and words[0] == "-":
        groups.pop(int(words[1]), None)
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
wanted = {"pipe:[%s]" % inode for inodes in groups.values() for inode in inodes}
own = str(os.getpid())
for pid in os.listdir("/proc"):
    if not pid.isdigit() or pid == own:
        continue
    try:
        with open("/proc/%s/environ" % pid, "rb") as environ:
            marked = marker in environ.read().split(b"\\0")
    except OSError:
        marked = False
    if marked:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            pass
        continue
    try:
        fds = os.listdir("/proc/%s/fd" % pid) if wanted else []
    except OSError:
        continue
    for fd in fds:
        try:
            if os.readlink("/proc/%s/fd/%s" % (pid, fd)) in wanted:
                os.kill(int(pid), signal.SIGKILL)
                break
        except OSError:
            pass
for directory in sys.argv[2:]:
    shutil.rmtree(directory, ignore_errors=True)
"""
"""The helper's program (``python -I -S -c SOURCE MARKER [DIR...]``): read registrations until EOF,
then kill, then remove the directories (the owner's spill files)."""


class Reaper:
    """The watchdog of one owner (a ``bash-local`` executor); see the module docstring.

    Registration is best effort: if the helper cannot be started or has died, commands
    still run, only without the SIGKILL-of-dsh guarantee. Never raises.
    """

    def __init__(self, cleanup: tuple[str, ...] = ()) -> None:
        self.cleanup = cleanup
        """Directories the helper removes when it ends (the owner's spill directory)."""
        self.marker = (MARKER_NAME, secrets.token_hex(12))
        """``(name, value)``: put it in every command's environment."""
        self._process: subprocess.Popen[bytes] | None = None
        self._pipe: IO[bytes] | None = None
        self._broken = False

    @property
    def pid(self) -> int | None:
        """The helper's pid once started."""
        return self._process.pid if self._process is not None else None

    def prepare(self) -> None:
        """Start the helper now (call it before spawning, so that registering right after
        the spawn is a single write: no window in which dsh could die unwatched)."""
        if self._pipe is None and not self._broken:
            try:
                self._start()
            except OSError:
                self._broken = True

    def register(self, pgid: int, inodes: tuple[int, ...]) -> None:
        """Kill group ``pgid`` and the holders of pipes ``inodes`` if dsh dies."""
        self._send(f"+ {pgid} {' '.join(map(str, inodes))}\n")

    def unregister(self, pgid: int) -> None:
        """Forget ``pgid`` (its group is gone or has been killed)."""
        if self._process is not None:
            self._send(f"- {pgid}\n")

    def close(self) -> None:
        """Let the helper exit (it kills what is still registered) and reap it; idempotent.

        A closed reaper stays closed: later registrations are no-ops."""
        self._broken = True
        process, self._process = self._process, None
        pipe, self._pipe = self._pipe, None
        if process is None or pipe is None:
            return
        with contextlib.suppress(OSError):
            pipe.close()
        process.wait()

    def _send(self, line: str) -> None:
        self.prepare()
        if self._pipe is None or self._broken:
            return
        try:
            self._pipe.write(line.encode())
            self._pipe.flush()
        except OSError:
            self._broken = True

    def _start(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", REAPER_SOURCE, "=".join(self.marker), *self.cleanup],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._pipe = self._process.stdin
