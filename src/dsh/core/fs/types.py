"""The filesystem vocabulary: workspaces, file facts, text windows and the fs errors.

Every value is an immutable ``msgspec.Struct``. Paths are absolute, lexically normalized
strings (symlinks not resolved) unless a field says otherwise. A file's ``version`` is an
opaque token that changes whenever its content may have changed (the local backend uses
inode, modification time and size; an atomic replace always makes a new inode).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Literal, TypeAlias

from msgspec import UNSET, Struct, UnsetType

from dsh.core.errors import HarnessError

FileKind: TypeAlias = Literal["file", "directory", "symlink", "other"]
"""What a path names; ``symlink`` appears only in listings (which do not follow links)."""

Newline: TypeAlias = Literal["\n", "\r\n"]
"""The line ending a text file uses, kept when the file is written back."""

FsErrorCode: TypeAlias = Literal[
    "INVALID_PATH",
    "OUTSIDE_WORKSPACE",
    "NOT_FOUND",
    "IS_DIRECTORY",
    "NOT_A_FILE",
    "BINARY",
    "NOT_UTF8",
    "INVALID_TEXT",
    "STALE",
    "DENIED",
    "IO_ERROR",
]


PathCheck: TypeAlias = Callable[[str], None]
"""The workspace fence of one operation, handed to a backend with the path it acts on.

A backend calls it with the real path of the object it actually opened (the kernel's
name of an open descriptor, or of the directory a write lands in), after the open and
before the first byte is read or written. It returns when that path lies inside the
workspace (or is the one the service already checked, or an ``fs/access`` listener
allows it) and raises :class:`FsError` ``OUTSIDE_WORKSPACE`` otherwise, so a symlink
swapped in between the service's check and the backend's open cannot lead outside.
"""


class FsError(HarnessError):
    """A refused or failed filesystem operation; ``message`` says what to do instead.

    ``code`` is one of :data:`FsErrorCode`; ``path`` names the file concerned.
    """

    def __init__(self, message: str, code: FsErrorCode, path: str = "", cause: object = None) -> None:
        super().__init__(message, code, cause)
        self.path = path


class Workspace(Struct, frozen=True, rename="camel"):
    """Where a session may touch files: ``root`` (its cwd) and ``extra_dirs``, all absolute.

    Relative paths resolve against ``root``. A path is inside when it, with every symlink
    resolved, lies under one of :attr:`roots`. ``session_id`` names the session working
    in it (when known): files of a session with an editor attached go through that editor.
    """

    root: str
    extra_dirs: tuple[str, ...] = ()
    session_id: str | UnsetType = UNSET

    @property
    def roots(self) -> tuple[str, ...]:
        return (self.root, *self.extra_dirs)

    def display(self, path: str) -> str:
        """``path`` relative to ``root`` when it lies under it, else as given."""
        if path == self.root:
            return "."
        prefix = self.root.rstrip(os.sep) + os.sep
        return path[len(prefix) :] if path.startswith(prefix) else path


class FileStat(Struct, frozen=True, rename="camel"):
    """The facts about one path at one moment."""

    path: str
    kind: FileKind
    size: int
    mtime_ns: int
    mode: int
    version: str


class TextWindow(Struct, frozen=True, rename="camel"):
    """A window of a text file's lines, without their line endings.

    ``offset`` is the 1-based number of ``lines[0]``; ``total_lines`` counts every line
    of the file (a last line without a newline counts). Lines longer than the requested
    maximum are cut to it; their numbers are in ``cut_lines``.
    """

    path: str
    lines: tuple[str, ...]
    offset: int
    total_lines: int
    newline: Newline
    stat: FileStat
    cut_lines: tuple[int, ...] = ()


class TextFile(Struct, frozen=True, rename="camel"):
    """A whole text file. With ``newline`` ``"\\r\\n"`` every CRLF of the file reads ``"\\n"``
    in ``text`` (writing it back with that newline restores them)."""

    path: str
    text: str
    newline: Newline
    stat: FileStat


class GlobResult(Struct, frozen=True, rename="camel"):
    """Files matching a glob, newest first, at most the requested number; ``total`` counts all."""

    files: tuple[FileStat, ...]
    total: int


class FsAccessRequest(Struct, frozen=True, rename="camel"):
    """A path outside the workspace someone asked for: ``path`` as resolved, ``real_path``
    with symlinks followed, ``operation`` what was to be done."""

    workspace: Workspace
    path: str
    real_path: str
    operation: str


class FsWriteIntent(Struct, frozen=True, rename="camel"):
    """A write about to happen: ``text`` with ``"\\n"`` line endings, written with ``newline``.

    ``operation`` ``write`` creates or overwrites; ``replace`` requires the file to still be
    at version ``expected``.
    """

    workspace: Workspace
    path: str
    text: str
    newline: Newline
    operation: Literal["write", "replace"]
    expected: str | UnsetType = UNSET


class FsObservation(Struct, frozen=True, rename="camel"):
    """A file was read or written and is now at ``stat``."""

    workspace: Workspace
    operation: Literal["read", "write"]
    stat: FileStat
