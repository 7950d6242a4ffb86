"""The ``fs`` service seam: workspace-bound text file access, gated by the ``fs/*`` events.

:class:`FileSystem` owns the rules every backend shares: how a path resolves against a
:class:`Workspace`, the refusal of paths outside it (unless an ``fs/access`` listener
allows them), the ``fs/write-intent`` gate around writes, the ``fs/observed`` notices,
and one lock per file so that writes to one path never interleave in this process.
A backend (``fs-local``) fills in the abstract ``_``-methods, which receive resolved
absolute paths. Every failure is an :class:`FsError` naming the fix.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Literal

from msgspec import UNSET

from dsh.core.fs.events import FS_ACCESS, FS_OBSERVED, FS_WRITE_INTENT
from dsh.core.fs.types import (
    FileStat,
    FsAccessRequest,
    FsError,
    FsObservation,
    FsWriteIntent,
    GlobResult,
    Newline,
    TextFile,
    TextWindow,
    Workspace,
)
from dsh.kernel import Context, Service, ServiceKey


def is_within(path: str, roots: Sequence[str]) -> bool:
    """True when ``path`` is one of ``roots`` or lies under one (all absolute and normalized)."""
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


class FileSystem(Service, ABC):
    """Abstract base of every filesystem backend, provided as ``ctx[FS]``.

    ``default_root`` is the workspace of a caller without one (None: the process cwd);
    ``extra_dirs`` are added to every workspace :meth:`workspace` builds.
    """

    def __init__(self, ctx: Context, *, default_root: str | None = None, extra_dirs: Sequence[str] = ()) -> None:
        super().__init__(ctx, FS)
        self.default_root = default_root
        self.extra_dirs = tuple(os.path.abspath(os.path.expanduser(path)) for path in extra_dirs)
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    # ------------------------------------------------------------ workspaces
    def workspace(self, cwd: str | None = None) -> Workspace:
        """The workspace of a session whose cwd is ``cwd`` (None: :attr:`default_root`)."""
        root = cwd or self.default_root or os.getcwd()
        return Workspace(root=os.path.abspath(os.path.expanduser(root)), extra_dirs=self.extra_dirs)

    def resolve(self, workspace: Workspace, path: str, operation: str = "access") -> str:
        """``path`` as an absolute normalized path, checked against ``workspace``.

        Relative paths resolve against the root and ``~`` expands. Raises ``FsError``
        ``INVALID_PATH`` for an empty path and ``OUTSIDE_WORKSPACE`` when the path, with
        its symlinks followed, lies outside every root and no ``fs/access`` listener
        allows it.
        """
        if not path.strip():
            raise FsError("the path is empty: give a file path (relative to the workspace or absolute)", "INVALID_PATH")
        if "\0" in path:
            raise FsError("the path contains a NUL character: give a plain file path", "INVALID_PATH", path)
        resolved = os.path.normpath(os.path.join(workspace.root, os.path.expanduser(path)))
        real = self._real_path(resolved)
        if is_within(real, [self._real_path(root) for root in workspace.roots]):
            return resolved
        request = FsAccessRequest(workspace=workspace, path=resolved, real_path=real, operation=operation)
        if self.ctx.waterfall(FS_ACCESS, request, inner=lambda: False) is True:
            return resolved
        via = f" (a symlink to {real})" if real != resolved else ""
        allowed = ", ".join(workspace.roots)
        raise FsError(
            f"{resolved}{via} is outside the workspace ({allowed}): use a path inside it",
            "OUTSIDE_WORKSPACE",
            resolved,
        )

    # ------------------------------------------------------------ operations
    async def stat(self, workspace: Workspace, path: str) -> FileStat | None:
        """The stat of ``path`` (symlinks followed), or None when nothing is there."""
        return await self._stat(self.resolve(workspace, path, "stat"))

    async def read_window(
        self, workspace: Workspace, path: str, offset: int = 1, limit: int = 2000, max_line_chars: int = 2000
    ) -> TextWindow:
        """Lines ``offset`` .. ``offset + limit - 1`` (1-based) of a UTF-8 text file.

        The backend streams the file: memory use follows the window, not the file size.
        Raises ``FsError`` (``NOT_FOUND``, ``IS_DIRECTORY``, ``BINARY``, ``NOT_UTF8`` …).
        """
        window = await self._read_window(self.resolve(workspace, path, "read"), offset, limit, max_line_chars)
        self.ctx.emit(FS_OBSERVED, FsObservation(workspace=workspace, operation="read", stat=window.stat))
        return window

    async def read_text(self, workspace: Workspace, path: str) -> TextFile:
        """The whole UTF-8 text of ``path`` (CRLF read as ``"\\n"`` when the file uses it)."""
        file = await self._read_text(self.resolve(workspace, path, "read"))
        self.ctx.emit(FS_OBSERVED, FsObservation(workspace=workspace, operation="read", stat=file.stat))
        return file

    async def write_text(self, workspace: Workspace, path: str, text: str, *, newline: Newline = "\n") -> FileStat:
        """Create or atomically overwrite ``path`` (parents created, an existing mode kept).

        ``text`` uses ``"\\n"``; each becomes ``newline`` on disk.
        """
        return await self._gated(workspace, path, text, newline, "write", None)

    async def replace_text(
        self, workspace: Workspace, path: str, text: str, *, expected: str, newline: Newline = "\n"
    ) -> FileStat:
        """Atomically replace ``path`` if it is still at version ``expected``.

        Raises ``FsError`` ``STALE`` when the file changed (or vanished) since.
        """
        return await self._gated(workspace, path, text, newline, "replace", expected)

    async def list_dir(self, workspace: Workspace, path: str) -> tuple[FileStat, ...]:
        """The entries of directory ``path`` by name (links not followed)."""
        return await self._list_dir(self.resolve(workspace, path, "list"))

    async def glob(self, workspace: Workspace, pattern: str, path: str = ".", limit: int = 100) -> GlobResult:
        """Files under ``path`` matching the relative glob ``pattern`` (``**`` spans
        directories), newest first, at most ``limit``; files whose real path leaves the
        workspace are skipped."""
        if os.path.isabs(pattern) or ".." in pattern.split("/"):
            raise FsError(
                f"the glob pattern {pattern!r} must be relative, without '..': pass the directory as path "
                "and a pattern such as '**/*.py'",
                "INVALID_PATH",
            )
        base = self.resolve(workspace, path, "glob")
        roots = [self._real_path(root) for root in workspace.roots]
        return await self._glob(base, pattern, limit, roots)

    async def _gated(
        self,
        workspace: Workspace,
        path: str,
        text: str,
        newline: Newline,
        operation: Literal["write", "replace"],
        expected: str | None,
    ) -> FileStat:
        resolved = self.resolve(workspace, path, operation)
        intent = FsWriteIntent(
            workspace=workspace,
            path=resolved,
            text=text,
            newline=newline,
            operation=operation,
            expected=UNSET if expected is None else expected,
        )
        lock = self._locks.get(resolved)
        if lock is None:
            lock = self._locks[resolved] = asyncio.Lock()
        async with lock:
            stat = await self.ctx.waterfall(FS_WRITE_INTENT, intent, inner=lambda: self._write(intent))
        self.ctx.emit(FS_OBSERVED, FsObservation(workspace=workspace, operation="write", stat=stat))
        return stat

    # -------------------------------------------------------------- backend
    @abstractmethod
    def _real_path(self, path: str) -> str:
        """``path`` with every symlink resolved (a missing tail kept as is)."""

    @abstractmethod
    async def _stat(self, path: str) -> FileStat | None:
        """The stat of ``path`` following links; None when it does not exist."""

    @abstractmethod
    async def _read_window(self, path: str, offset: int, limit: int, max_line_chars: int) -> TextWindow:
        """See :meth:`read_window`."""

    @abstractmethod
    async def _read_text(self, path: str) -> TextFile:
        """See :meth:`read_text`."""

    @abstractmethod
    async def _write(self, intent: FsWriteIntent) -> FileStat:
        """Write ``intent`` atomically; for ``replace``, check ``intent.expected`` first."""

    @abstractmethod
    async def _list_dir(self, path: str) -> tuple[FileStat, ...]:
        """See :meth:`list_dir`."""

    @abstractmethod
    async def _glob(self, base: str, pattern: str, limit: int, roots: Sequence[str]) -> GlobResult:
        """See :meth:`glob`; ``roots`` are the real workspace roots results must stay in."""


FS: ServiceKey[FileSystem] = ServiceKey("fs")
"""The filesystem service key."""
