"""Where a session's bash spill files live, and the size cap of that folder.

A session's files are kept in a folder of their own under a root (the CLI's: the
sessions root)::

    <root>/_session-files/<session segment>/bash/dsh-bash-<...>-stdout.log

The segment is the session id itself when it is made of ``[A-Za-z0-9._-]`` only (and
is not ``.`` or ``..``), else ``~`` and the SHA-256 of the id in hex: always one path
segment, and two ids never share a folder. Deleting a session deletes its folder
(:func:`session_folder` says which one). :func:`prune_spills` keeps a bash folder under
its total size cap by removing its oldest files first.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Collection

SESSION_FILES = "_session-files"
"""The folder under the root that holds one folder per session."""

_PLAIN = re.compile(r"[A-Za-z0-9._-]+")


def session_segment(session_id: str) -> str:
    """The folder name of ``session_id`` (see the module docstring)."""
    if _PLAIN.fullmatch(session_id) and session_id not in (".", ".."):
        return session_id
    return "~" + hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()


def session_folder(root: str, session_id: str) -> str:
    """The folder holding every file dsh keeps for ``session_id`` under ``root``."""
    return os.path.join(root, SESSION_FILES, session_segment(session_id))


def bash_spill_dir(root: str, session_id: str) -> str:
    """Where the spill files of ``session_id``'s bash commands go."""
    return os.path.join(session_folder(root, session_id), "bash")


def prune_spills(directory: str, max_bytes: int, keep: Collection[str] = ()) -> list[str]:
    """Remove the oldest files of ``directory`` until its files total at most ``max_bytes``.

    Files named in ``keep`` (full paths) are never removed. Oldest means the earliest
    modification time (then the name). Never raises: a folder or file that cannot be
    read or removed is skipped. Returns the paths removed, oldest first.
    """
    files: list[tuple[int, str, int]] = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.is_file(follow_symlinks=False):
                        stat = entry.stat(follow_symlinks=False)
                        files.append((stat.st_mtime_ns, entry.path, stat.st_size))
    except OSError:
        return []
    total = sum(size for _, _, size in files)
    removed: list[str] = []
    for _, path, size in sorted(files):
        if total <= max_bytes:
            break
        if path in keep:
            continue
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size
        removed.append(path)
    return removed
