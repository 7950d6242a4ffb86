"""The ``fs`` service seam: workspace-bound text file access, gated by the ``fs/*`` events.

:class:`FileSystem` owns the rules every backend shares: how a path resolves against a
:class:`Workspace`, the refusal of paths outside it (unless an ``fs/access`` listener
allows them), the ``fs/write-intent`` gate around writes, the ``fs/observed`` notices,
and one lock per file so that writes to one path never interleave in this process.
A session may have an editor attached (:meth:`FileSystem.attach_editor`, see
:mod:`dsh.core.fs.editor`): its text reads and writes then go through the editor.
A backend (``fs-local``) fills in the abstract ``_``-methods, which receive resolved
absolute paths. Every failure is an :class:`FsError` naming the fix.

The fence binds what is opened, not only the name asked for: :meth:`FileSystem.resolve`
checks the path's real path up front (the early, clear refusal), and each operation also
hands the backend a :data:`~dsh.core.fs.PathCheck` it must call with the real path of the
descriptor it opened (for a write: of the directory the file is created and renamed in)
before reading or writing anything. A path component swapped for a symlink leading out
between the two (by a concurrent bash command, say) is then refused just the same.
"""

from __future__ import annotations

import asyncio
import functools
import os
import weakref
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal

from msgspec import UNSET

from dsh.core.fs.editor import EditorFiles, as_text_file, content_version, versioned, window_of
from dsh.core.fs.events import FS_ACCESS, FS_OBSERVED, FS_WRITE_INTENT
from dsh.core.fs.types import (
    FileStat,
    FsAccessRequest,
    FsError,
    FsObservation,
    FsWriteIntent,
    GlobResult,
    Newline,
    PathCheck,
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
        self._editors: dict[str, EditorFiles] = {}
        self._root_reals: dict[str, str] = {}

    # ------------------------------------------------------------ workspaces
    def workspace(self, cwd: str | None = None, *, session_id: str | None = None) -> Workspace:
        """The workspace of session ``session_id`` whose cwd is ``cwd`` (None: :attr:`default_root`)."""
        root = cwd or self.default_root or os.getcwd()
        return Workspace(
            root=os.path.abspath(os.path.expanduser(root)),
            extra_dirs=self.extra_dirs,
            session_id=UNSET if session_id is None else session_id,
        )

    def attach_editor(self, session_id: str, editor: EditorFiles) -> Callable[[], None]:
        """Route session ``session_id``'s text reads and writes through ``editor`` until the returned
        disposer runs (see :mod:`dsh.core.fs.editor`). One editor per session: attaching another
        raises ``ValueError``."""
        if session_id in self._editors:
            raise ValueError(f"session {session_id} already has an editor attached: detach it first")
        editors = self._editors
        editors[session_id] = editor

        def detach() -> None:
            if editors.get(session_id) is editor:
                del editors[session_id]

        return detach

    def _editor(self, workspace: Workspace) -> EditorFiles | None:
        session_id = workspace.session_id
        return None if session_id is UNSET or not self._editors else self._editors.get(session_id)

    async def _editor_file(self, editor: EditorFiles, path: str, check: PathCheck) -> TextFile | None:
        """The editor's view of ``path`` (None when it is no regular file: the backend says why)."""
        stat = await self._stat(path, check)
        if stat is None or stat.kind != "file":
            return None
        if editor.reads:
            return as_text_file(stat, await editor.read(path))
        file = await self._read_text(path, check)
        raw = file.text.replace("\n", "\r\n") if file.newline == "\r\n" else file.text
        return TextFile(path=file.path, text=file.text, newline=file.newline, stat=versioned(file.stat, raw))

    def resolve(self, workspace: Workspace, path: str, operation: str = "access") -> str:
        """``path`` as an absolute normalized path, checked against ``workspace``.

        Relative paths resolve against the root and ``~`` expands. Raises ``FsError``
        ``INVALID_PATH`` for an empty path and ``OUTSIDE_WORKSPACE`` when the path, with
        its symlinks followed, lies outside every root and no ``fs/access`` listener
        allows it. The backend checks again what it opens (see :meth:`_fence`).
        """
        return self._fence(workspace, path, operation)[0]

    def _fence(self, workspace: Workspace, path: str, operation: str) -> tuple[str, PathCheck]:
        """:meth:`resolve`, and the :data:`PathCheck` the backend applies to what it opens.

        The check accepts, at the cost of one string comparison, the real path this call
        already accepted; another inside the workspace; and an outside one only when an
        ``fs/access`` listener allows it (asked again, with that real path).
        """
        if not path.strip():
            raise FsError("the path is empty: give a file path (relative to the workspace or absolute)", "INVALID_PATH")
        if "\0" in path:
            raise FsError("the path contains a NUL character: give a plain file path", "INVALID_PATH", path)
        resolved = os.path.normpath(os.path.join(workspace.root, os.path.expanduser(path)))
        real = self._real_path(resolved)
        roots = self._real_roots(workspace)
        if not is_within(real, roots):
            self._outside(workspace, resolved, real, operation)

        def check(opened: str) -> None:
            if opened != real and not is_within(opened, roots):
                self._outside(workspace, resolved, opened, operation)

        return resolved, check

    def _outside(self, workspace: Workspace, resolved: str, real: str, operation: str) -> None:
        """Return if an ``fs/access`` listener allows ``resolved`` (real path ``real``); else refuse it."""
        request = FsAccessRequest(workspace=workspace, path=resolved, real_path=real, operation=operation)
        if self.ctx.waterfall(FS_ACCESS, request, inner=lambda: False) is True:
            return
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
        resolved, check = self._fence(workspace, path, "stat")
        editor = self._editor(workspace)
        if editor is not None:
            file = await self._editor_file(editor, resolved, check)
            if file is not None:
                return file.stat
        return await self._stat(resolved, check)

    async def read_window(
        self, workspace: Workspace, path: str, offset: int = 1, limit: int = 2000, max_line_chars: int = 2000
    ) -> TextWindow:
        """Lines ``offset`` .. ``offset + limit - 1`` (1-based) of a UTF-8 text file.

        The backend streams the file: memory use follows the window, not the file size.
        Raises ``FsError`` (``NOT_FOUND``, ``IS_DIRECTORY``, ``BINARY``, ``NOT_UTF8`` …).
        """
        resolved, check = self._fence(workspace, path, "read")
        editor = self._editor(workspace)
        file = None if editor is None else await self._editor_file(editor, resolved, check)
        if file is not None:
            window = window_of(file, offset, limit, max_line_chars)
        else:
            window = await self._read_window(resolved, check, offset, limit, max_line_chars)
        self._observed(workspace, "read", window.stat)
        return window

    async def read_text(self, workspace: Workspace, path: str) -> TextFile:
        """The whole UTF-8 text of ``path`` (CRLF read as ``"\\n"`` when the file uses it)."""
        resolved, check = self._fence(workspace, path, "read")
        editor = self._editor(workspace)
        found = None if editor is None else await self._editor_file(editor, resolved, check)
        file = found if found is not None else await self._read_text(resolved, check)
        self._observed(workspace, "read", file.stat)
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
        resolved, check = self._fence(workspace, path, "list")
        return await self._list_dir(resolved, check)

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
        return await self._glob(base, pattern, limit, self._real_roots(workspace))

    async def _gated(
        self,
        workspace: Workspace,
        path: str,
        text: str,
        newline: Newline,
        operation: Literal["write", "replace"],
        expected: str | None,
    ) -> FileStat:
        resolved, check = self._fence(workspace, path, operation)
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
        editor = self._editor(workspace)
        write: Callable[[FsWriteIntent, PathCheck], Awaitable[FileStat]] = self._write
        if editor is not None and editor.writes:
            write = functools.partial(self._editor_write, editor)
        async with lock:
            stat = await self.ctx.waterfall(FS_WRITE_INTENT, intent, inner=lambda: write(intent, check))
        self._observed(workspace, "write", stat)
        return stat

    def _observed(self, workspace: Workspace, operation: Literal["read", "write"], stat: FileStat) -> None:
        """Emit ``fs/observed`` (the notice is built only when someone listens)."""
        if self.ctx.listener_count(FS_OBSERVED):
            self.ctx.emit(FS_OBSERVED, FsObservation(workspace=workspace, operation=operation, stat=stat))

    async def _editor_write(self, editor: EditorFiles, intent: FsWriteIntent, check: PathCheck) -> FileStat:
        """Write ``intent`` through ``editor``: ``replace`` first checks the editor's text is
        still at version ``expected``; the result is versioned by the text written."""
        path = intent.path
        current = await self._editor_file(editor, path, check)
        if current is None and await self._stat(path, check) is not None:
            raise FsError(f"{path} is a directory: give the path of a file to write", "IS_DIRECTORY", path)
        if intent.operation == "replace" and (current is None or current.stat.version != intent.expected):
            raise FsError(f"{path} changed since it was read: read it again and redo the change", "STALE", path)
        raw = intent.text if intent.newline == "\n" else intent.text.replace("\n", intent.newline)
        await editor.write(path, raw)
        if current is not None:
            return versioned(current.stat, raw)
        size = len(raw.encode("utf-8", "surrogatepass"))  # a new file: the editor creates it (now or when saved)
        return FileStat(path=path, kind="file", size=size, mtime_ns=0, mode=0o644, version=content_version(raw))

    def _real_roots(self, workspace: Workspace) -> list[str]:
        """The real paths of ``workspace``'s roots; a root that is a directory is resolved once per service.

        A root that does not exist yet is resolved again at each call (it may appear as a
        symlink); one that exists keeps the directory it named when first seen.
        """
        reals = []
        for root in workspace.roots:
            real = self._root_reals.get(root)
            if real is None:
                real = self._real_path(root)
                if os.path.isdir(real):
                    self._root_reals[root] = real
            reals.append(real)
        return reals

    # -------------------------------------------------------------- backend
    @abstractmethod
    def _real_path(self, path: str) -> str:
        """``path`` with every symlink resolved (a missing tail kept as is)."""

    # Each method taking a ``check`` calls it with the real path of what it opened (the
    # descriptor itself, or the directory a write lands in) before using it; see PathCheck.
    @abstractmethod
    async def _stat(self, path: str, check: PathCheck) -> FileStat | None:
        """The stat of ``path`` following links; None when it does not exist."""

    @abstractmethod
    async def _read_window(
        self, path: str, check: PathCheck, offset: int, limit: int, max_line_chars: int
    ) -> TextWindow:
        """See :meth:`read_window`."""

    @abstractmethod
    async def _read_text(self, path: str, check: PathCheck) -> TextFile:
        """See :meth:`read_text`."""

    @abstractmethod
    async def _write(self, intent: FsWriteIntent, check: PathCheck) -> FileStat:
        """Write ``intent`` atomically; for ``replace``, check ``intent.expected`` first, on the
        same directory entry the rename replaces."""

    @abstractmethod
    async def _list_dir(self, path: str, check: PathCheck) -> tuple[FileStat, ...]:
        """See :meth:`list_dir`."""

    @abstractmethod
    async def _glob(self, base: str, pattern: str, limit: int, roots: Sequence[str]) -> GlobResult:
        """See :meth:`glob`; ``roots`` are the real workspace roots results must stay in."""


FS: ServiceKey[FileSystem] = ServiceKey("fs")
"""The filesystem service key."""
