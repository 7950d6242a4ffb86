"""Private directories for storage backends: created with mode 0700, tolerant of concurrent creators."""

from __future__ import annotations

import contextlib
import os

DIR_MODE = 0o700
"""The mode of every directory a storage backend creates (owner only)."""


def make_private_dirs(path: str) -> list[str]:
    """Create directory ``path`` and its missing ancestors, each with mode 0700.

    Directories that exist are left as they are, including one another process
    creates meanwhile. Returns the directories this call created, outermost first
    (their parents' entries are not yet durable: fsync them if that matters).
    Raises ``OSError`` for anything else (a file in the way, no permission).
    """
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        return []
    except FileNotFoundError:
        created = make_private_dirs(os.path.dirname(path))
        with contextlib.suppress(FileExistsError):  # another writer made it meanwhile
            os.mkdir(path, DIR_MODE)
            created.append(path)
        return created
    return [path]


def unwritable_dir(path: str) -> str | None:
    """Why a directory cannot be created or written at ``path``, or None when it can.

    ``path`` (or, when it does not exist yet, its nearest existing ancestor, where it
    would be created) must be a directory this process may write and enter. The
    answer names the path at fault: ``"<path> is not a directory"`` or ``"<path> is
    not writable"``, with the ancestor in parentheses when it is the one at fault.
    """
    existing = os.path.abspath(path)
    while not os.path.exists(existing) and existing != os.path.dirname(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        return f"{path} is not a directory" + (
            "" if existing == path else f" (its parent {existing} is not a directory)"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{path} is not writable" + ("" if existing == path else f" (its parent {existing} is not writable)")
    return None
