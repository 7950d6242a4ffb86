"""What each session has seen of each file: the read-before-edit record.

A :class:`ReadLedger` maps (session, path) to the file version the session last read or
wrote. ``edit``, and ``write`` over an existing file, go ahead only when the file on
disk is still at that version, so the model never changes a file it has not seen as it
is. One lock per path keeps the check, the read and the write of one change together:
concurrent changes of one file by this process run one after the other, each against
the version the previous one left.
"""

from __future__ import annotations

import asyncio
import weakref

from dsh.core.errors import HarnessError
from dsh.core.fs import FileStat, FsError


def session_key(agent: object | None) -> str:
    """Whose record a call uses: the agent's session id, else the agent object, else ``""``."""
    session_id = getattr(getattr(agent, "session", None), "id", None)
    if isinstance(session_id, str):
        return session_id
    return "" if agent is None else f"agent-{id(agent)}"


def session_id(agent: object | None) -> str | None:
    """The agent's session id, if it has one (it selects the session's editor, when attached)."""
    value = getattr(getattr(agent, "session", None), "id", None)
    return value if isinstance(value, str) else None


def session_cwd(agent: object | None) -> str | None:
    """The agent's session workspace (``session.header.cwd``), if it has one."""
    cwd = getattr(getattr(getattr(agent, "session", None), "header", None), "cwd", None)
    return cwd if isinstance(cwd, str) and cwd else None


class ReadLedger:
    """The versions each session saw, and the per-path locks of changes."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], str] = {}
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    def record(self, key: str, stat: FileStat) -> None:
        """Session ``key`` has now seen ``stat.path`` at ``stat.version``."""
        self._seen[key, stat.path] = stat.version

    def seen(self, key: str, path: str) -> str | None:
        return self._seen.get((key, path))

    def lock(self, path: str) -> asyncio.Lock:
        """The lock serializing changes of ``path`` (shared while anyone holds it)."""
        lock = self._locks.get(path)
        if lock is None:
            lock = self._locks[path] = asyncio.Lock()
        return lock

    def check(self, key: str, stat: FileStat, shown: str, verb: str) -> None:
        """Refuse to ``verb`` the file unless session ``key`` saw it at its current version."""
        seen = self.seen(key, stat.path)
        if seen is None:
            raise HarnessError(
                f"{shown} has not been read in this session: call read on it first, then {verb} it "
                "(existing files are changed only after you have seen them)",
                "NOT_READ",
            )
        if seen != stat.version:
            raise FsError(
                f"{shown} changed on disk since you last read it: read it again, then redo the {verb} "
                "against its current content",
                "STALE",
                stat.path,
            )

    def forget(self) -> None:
        self._seen.clear()
