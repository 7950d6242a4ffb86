"""Files a session reads and writes through an editor (ACP ``fs/*``) instead of the disk.

An :class:`EditorFiles` attached to a session (:meth:`~dsh.core.fs.FileSystem.attach_editor`)
makes that session's text reads return the editor's buffer (unsaved changes included)
and its writes go to the editor, which applies them to the buffer. Everything else
(resolution, workspace checks, ``fs/*`` gates, stat, listing, glob) stays the backend's.

**Versions.** What the session saw is identified by content, not by the disk: a file's
``version`` is a hash of the text the editor holds (``editor:<sha256>``), so an edit the
user typed into the buffer since the agent read it is a ``STALE`` refusal, and a buffer
the editor has not saved yet is no false one. With an editor that only writes, the text
is read from the disk and hashed the same way.
"""

from __future__ import annotations

import hashlib
from typing import Protocol

from msgspec import structs

from dsh.core.fs.types import FileStat, Newline, TextFile, TextWindow


class EditorFiles(Protocol):
    """One session's editor: ``reads`` / ``writes`` say which of the two it does.

    ``read`` returns the whole current text of the absolute ``path`` (as the editor holds
    it, line endings included); ``write`` replaces it with ``text``. A failure raises
    (an :class:`~dsh.core.fs.FsError` naming the fix, or any exception: it fails the call).
    """

    @property
    def reads(self) -> bool: ...

    @property
    def writes(self) -> bool: ...

    async def read(self, path: str) -> str: ...

    async def write(self, path: str, text: str) -> None: ...


def content_version(text: str) -> str:
    """The version of a file whose text is ``text``."""
    return "editor:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def as_text_file(stat: FileStat, raw: str) -> TextFile:
    """``raw`` (the editor's text of the file at ``stat``) as a :class:`TextFile` versioned by content."""
    first = raw.find("\n")
    newline: Newline = "\r\n" if first > 0 and raw[first - 1] == "\r" else "\n"
    text = raw.replace("\r\n", "\n") if newline == "\r\n" else raw
    return TextFile(path=stat.path, text=text, newline=newline, stat=versioned(stat, raw))


def versioned(stat: FileStat, raw: str) -> FileStat:
    """``stat`` with the version of content ``raw``."""
    return structs.replace(stat, version=content_version(raw))


def window_of(file: TextFile, offset: int, limit: int, max_line_chars: int) -> TextWindow:
    """Lines ``offset .. offset + limit - 1`` of ``file``, cut as the backends cut them."""
    lines = file.text.split("\n")
    if lines[-1] == "":
        lines.pop()  # a final newline ends the last line; it does not start another
    picked: list[str] = []
    cut: list[int] = []
    for number, line in enumerate(lines[offset - 1 : offset - 1 + limit], offset):
        if len(line) > max_line_chars:
            line = line[:max_line_chars]
            cut.append(number)
        picked.append(line)
    return TextWindow(
        path=file.path,
        lines=tuple(picked),
        offset=offset,
        total_lines=len(lines),
        newline=file.newline,
        stat=file.stat,
        cut_lines=tuple(cut),
    )
