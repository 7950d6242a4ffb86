"""The SQLite schema of the session database (SPEC §4c) and opening it.

``sessions`` holds one row per *materialized* session (written with its first
events); ``events`` one row per event, ``data`` being the event's ``data`` as compact
JSON. Both tables are STRICT (SQLite 3.37 or newer). ``PRAGMA user_version`` stamps
the schema version. A version-2 database (before the ``seed_length`` column of fork
lineage) is upgraded in place by adding that column; a database stamped with any other
version is refused, never migrated.
"""

from __future__ import annotations

import os
import sqlite3

from dsh.core.persistence import PersistenceError

SCHEMA_VERSION = 3

UPGRADABLE_VERSION = 2
"""The one older schema :func:`open_database` upgrades (by adding ``sessions.seed_length``)."""

BUSY_TIMEOUT_MS = 30_000
"""How long every connection waits for another process's write lock before failing."""

FILE_MODE = 0o600

_SCHEMA = f"""
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY,
  version INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  cwd TEXT,
  parent_session TEXT,
  seed_length INTEGER
) STRICT;
CREATE TABLE IF NOT EXISTS events (
  session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  type TEXT NOT NULL,
  time INTEGER NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (session_id, seq)
) STRICT;
PRAGMA user_version = {SCHEMA_VERSION};
COMMIT;
"""


def open_database(path: str) -> sqlite3.Connection:
    """Open (creating if needed) the session database at ``path`` (``":memory:"`` allowed).

    A new database file is created with mode 0600. Every connection waits up to
    :data:`BUSY_TIMEOUT_MS` for a lock another process holds, and the schema is
    applied in an immediate transaction, so many processes opening one database at
    once all succeed. The connection is in autocommit mode (callers open their own transactions), with
    foreign keys on and WAL journaling; it may be used from any thread, one thread at
    a time (the caller serializes). A fresh database (``user_version`` 0) gets the
    schema and is stamped :data:`SCHEMA_VERSION`. Raises :class:`PersistenceError`
    (``SCHEMA_VERSION``) for a database of another schema version and
    (``STORAGE_IO``) when the file cannot be opened as a database; nothing stays open
    on failure.
    """
    try:
        if path != ":memory:":
            _create_private(path)
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False)
    except (OSError, sqlite3.Error) as error:
        raise _open_failed(path, error) from error
    try:
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        db.execute("PRAGMA foreign_keys = ON")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")  # every commit syncs the WAL, unless a checkpoint's write says not to
        (version,) = db.execute("PRAGMA user_version").fetchone()
        if version == UPGRADABLE_VERSION:
            _upgrade(db)
        elif version not in (0, SCHEMA_VERSION):
            raise PersistenceError(
                f'session database at "{path}" has schema version {version}, '
                f"incompatible with this build ({SCHEMA_VERSION})",
                "SCHEMA_VERSION",
            )
        db.executescript(_SCHEMA)
    except BaseException as error:
        db.close()
        if isinstance(error, sqlite3.Error):
            raise _open_failed(path, error) from error
        raise
    return db


def _upgrade(db: sqlite3.Connection) -> None:
    """Add ``sessions.seed_length`` to a version-2 database, once even when processes race to do it."""
    db.execute("BEGIN IMMEDIATE")
    try:
        (version,) = db.execute("PRAGMA user_version").fetchone()
        if version == UPGRADABLE_VERSION:
            db.execute("ALTER TABLE sessions ADD COLUMN seed_length INTEGER")
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _create_private(path: str) -> None:
    """Create ``path`` empty with mode 0600 unless it exists (SQLite gives its WAL files the same mode)."""
    fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    os.close(fd)


def _open_failed(path: str, error: OSError | sqlite3.Error) -> PersistenceError:
    return PersistenceError(
        f'cannot open the session database at "{path}": {error} '
        "(point the path at a writable location holding a dsh session database, or at a new file)",
        "STORAGE_IO",
        error,
    )
