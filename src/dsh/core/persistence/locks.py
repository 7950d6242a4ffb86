"""WriterLocks: one writer per session, across processes, through ``flock`` lock files.

A backend that stores sessions on a local disk keeps one lock file per session id in
a directory of its own (``<dir>/<hash of the id>.lock``, mode 0600). Taking a session's
lock is an exclusive, non-blocking ``fcntl.flock`` on that file; the holder then
writes its pid into the file so that a refused writer can name it, and clears it
when it lets go. The lock is held
until :meth:`WriterLocks.release` (the session was retired), :meth:`WriterLocks.close`
(the backend's close) or the end of the process: the
kernel releases a ``flock`` when its holder dies, even on SIGKILL, so a crashed
writer never leaves a stale lock behind. Lock files are never deleted (unlinking a
locked file would let a third process lock a fresh inode beside a live holder).

A ``flock`` belongs to an open file description: a second :class:`WriterLocks` over
the same directory, in the same process or another, is refused exactly like another
process. Within one instance, taking a lock it already holds succeeds.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time

from dsh.core.persistence.dirs import make_private_dirs
from dsh.core.persistence.errors import PersistenceError

LOCK_MODE = 0o600
LOCK_SUFFIX = ".lock"


HOLDER_WAIT_S = 1.0
"""How long a refused writer waits for the holder to write its pid (it does so right after locking)."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except PermissionError:  # a process of another user: it exists
        return True
    except OSError:
        return False
    return True


def _holder(fd: int) -> str:
    """The live pid the lock file names, or ``unknown`` if none is there within :data:`HOLDER_WAIT_S`.

    A pid of a process that is gone is a holder killed before it could clear the file:
    the new holder has locked but not yet written its own, so the wait goes on.
    """
    deadline = time.monotonic() + HOLDER_WAIT_S
    while True:
        with contextlib.suppress(OSError):
            text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            if text.isdigit() and _alive(int(text)):
                return text
        if time.monotonic() >= deadline:
            return "unknown"
        time.sleep(0.002)


class WriterLocks:
    """The writer locks of one backend instance over lock directory ``directory``.

    Blocking calls (a few syscalls each: the lock directory is created only when
    opening a lock file finds it missing, so a held store costs no ``mkdir`` per
    session); :meth:`acquire` raises
    :class:`PersistenceError` ``SESSION_LOCKED`` naming the holder's pid when another
    writer holds the session, ``STORAGE_IO`` when the lock file cannot be opened.
    """

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._held: dict[str, int] = {}

    def path(self, id: str) -> str:
        """The lock file of session ``id``: named by the first 24 hex digits of the SHA-256 of the id."""
        digest = hashlib.sha256(id.encode("utf-8", "surrogatepass")).hexdigest()[:24]
        return os.path.join(self.directory, digest + LOCK_SUFFIX)

    def acquire(self, id: str) -> list[str]:
        """Hold the lock of session ``id`` until :meth:`close`.

        Returns the directories this call created for the lock file, outermost first
        (see :func:`~dsh.core.persistence.make_private_dirs`); usually none.
        """
        if id in self._held:
            return []
        path = self.path(id)
        created: list[str] = []
        try:
            try:
                fd = _open_lock(path)
            except FileNotFoundError:  # the first lock of this directory (or it was removed): make it
                created = make_private_dirs(self.directory)
                fd = _open_lock(path)
        except OSError as error:
            raise PersistenceError(
                f'cannot open the writer lock of session "{id}" at {path}: {error} '
                "(check that the sessions storage is a writable directory)",
                "STORAGE_IO",
                error,
            ) from error
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise PersistenceError(
                f'session "{id}" is in use by another dsh process (pid {holder}); '
                "wait for it to finish or stop it, then try again",
                "SESSION_LOCKED",
            ) from None
        with contextlib.suppress(OSError):  # the pid only informs a refused writer
            pid = f"{os.getpid()}\n".encode("ascii")
            os.pwrite(fd, pid, 0)  # one write: a reader sees the old text or the new, never none
            os.ftruncate(fd, len(pid))
        self._held[id] = fd
        return created

    def release(self, id: str) -> None:
        """Let go of the lock of session ``id`` (a no-op when this instance does not hold it)."""
        fd = self._held.pop(id, None)
        if fd is not None:
            _let_go(fd)

    def close(self) -> None:
        """Release every lock this instance holds (idempotent)."""
        held, self._held = self._held, {}
        for fd in held.values():
            _let_go(fd)


def _open_lock(path: str) -> int:
    """Open (creating it, mode 0600) the lock file ``path``; never through a symbolic link."""
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, LOCK_MODE)


def _let_go(fd: int) -> None:
    """Clear the holder's pid (a refused writer must not name a process that let go) and unlock."""
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
    os.close(fd)
