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
