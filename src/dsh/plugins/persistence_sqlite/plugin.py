"""SessionPersistenceSqlite: one row per event in a SQLite database (SPEC §4c)."""

from __future__ import annotations

import builtins
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import TypeAlias, TypeVar, cast

from msgspec import UNSET
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from dsh.core.persistence import (
    MISSING,
    BatchedOffload,
    CoordinatedPersistence,
    PersistenceError,
    StoredPrefix,
    WriterLocks,
    cwd_of,
    data_text,
    make_private_dirs,
    paused_gc,
)
from dsh.core.session import SessionEvent, SessionHeader
from dsh.kernel import Context, expand_config_path
from dsh.plugins.persistence_sqlite.scan import scan_rows
from dsh.plugins.persistence_sqlite.schema import open_database

MEMORY_PATH = ":memory:"
LOCKS_SUFFIX = ".locks"
"""The directory of the writer lock files beside a database file: ``<path>.locks/``."""

T = TypeVar("T")

_INSERT_EVENT = "INSERT INTO events (session_id, seq, type, time, data) VALUES (?, ?, ?, ?, ?)"
_UPSERT_SESSION = (
    "INSERT INTO sessions (id, version, created_at, cwd, parent_session, seed_length) VALUES (?, ?, ?, ?, ?, ?) "
    "ON CONFLICT(id) DO UPDATE SET version = excluded.version, created_at = excluded.created_at, "
    "cwd = excluded.cwd, parent_session = excluded.parent_session, seed_length = excluded.seed_length"
)


class SqliteConfig(BaseModel):
    """``path``: the database file (a :data:`~dsh.kernel.ConfigPath`: ``~`` and ``$NAME`` expanded,
    relative to the tree file; made absolute, parents created 0700), or ``":memory:"``."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1)

    @field_validator("path")
    @classmethod
    def _expand(cls, value: str, info: ValidationInfo) -> str:
        return value if value == ":memory:" else expand_config_path(value, info)


def _header(
    id: str, version: int, created_at: int, cwd: str | None, parent: str | None, seed_length: int | None
) -> SessionHeader:
    """The header of a ``sessions`` row (a NULL column is an absent field)."""
    return SessionHeader(
        version=version,
        id=id,
        created_at=created_at,
        cwd=UNSET if cwd is None else cwd,
        parent_session=UNSET if parent is None else parent,
        seed_length=UNSET if seed_length is None else seed_length,
    )


_Row: TypeAlias = tuple[str, int, str, int, str]
"""An ``events`` row to insert: ``(session_id, seq, type, time, data)``."""


def _rows(id: str, events: Iterable[SessionEvent]) -> list[_Row]:
    """The ``events`` rows of ``events``: each event's ``data`` encoded once, here."""
    return [(id, event.seq, event.type, event.time, data_text(event)) for event in events]


class SessionPersistenceSqlite(CoordinatedPersistence):
    """The SQLite ``session_persistence`` plugin (``path`` config, ``inject = ["sessions"]``).

    The database is opened in the constructor, so a bad path or an incompatible schema
    fails the plugin load. Every batch is one transaction (all rows or none).

    The connection belongs to one worker thread of this backend: every hook runs its
    sqlite3 calls there, one at a time, in the order the hooks were called (a read scans
    its rows there too; a write encodes its rows on the loop first), so the event loop
    never waits on a commit or on another process holding the write lock (sqlite3's busy
    timeout is 5 s). Calls that arrive while the thread is busy go to it together, in one
    :class:`~dsh.core.persistence.BatchedOffload` batch. A hook whose caller is cancelled
    still finishes its transaction. Driver failures are raised as
    :class:`~dsh.core.persistence.PersistenceError` (code ``STORAGE_IO``, the
    ``sqlite3.Error`` as ``__cause__``).

    One writer per session: SQLite's own locking keeps transactions apart, and a
    per-session ``flock`` lock file in ``<path>.locks/`` (see
    :class:`~dsh.core.persistence.WriterLocks`), taken when a session is loaded,
    adopted or created and held until :meth:`close`, keeps a second process from
    writing the same session (``SESSION_LOCKED``, naming the holder's pid).
    :meth:`close` closes the connection and stops the worker; a hook called after it
    fails with ``STORAGE_IO``.
    """

    name = "session-persistence-sqlite"
    inject = ("sessions",)
    Config = SqliteConfig

    def __init__(self, ctx: Context, config: SqliteConfig) -> None:
        path = config.path
        if path != MEMORY_PATH:
            path = os.path.abspath(path)
            try:
                make_private_dirs(os.path.dirname(path))
            except OSError as error:
                raise PersistenceError(
                    f'cannot create the directory of the session database "{path}": {error} '
                    "(choose a path whose parent can be a directory)",
                    "STORAGE_IO",
                    error,
                ) from error
        self.path = path
        self.locks = WriterLocks(path + LOCKS_SUFFIX)
        self.db = open_database(path)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dsh-sqlite")
        self._offload = BatchedOffload(self._worker, width=1)
        self._closed = False
        try:
            super().__init__(ctx)
        except BaseException:
            self._worker.shutdown()
            self.db.close()
            raise

    @contextmanager
    def _storage(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as error:
            raise PersistenceError(
                f'{action} failed: {error} (check the session database at "{self.path}")', "STORAGE_IO", error
            ) from error

    @contextmanager
    def _transaction(self, action: str) -> Iterator[sqlite3.Connection]:
        """One write transaction: committed on success, rolled back on any failure."""
        with self._storage(action):
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
                self.db.commit()
            except BaseException:
                self.db.rollback()
                raise

    async def _run(self, action: str, work: Callable[[], T]) -> T:
        """Run ``work`` on the connection's worker thread."""
        if self._closed:
            raise PersistenceError(
                f'{action} failed: the session database "{self.path}" is closed (its backend was disposed)',
                "STORAGE_IO",
            )
        return await self._offload.run(work)

    # ------------------------------------------------------------------ worker-thread work
    def _read(self, id: str) -> StoredPrefix | None:
        with self._storage(f'reading session "{id}"'):
            row = self.db.execute(
                "SELECT version, created_at, cwd, parent_session, seed_length FROM sessions WHERE id = ?", (id,)
            ).fetchone()
            if row is None:
                return None
            with paused_gc():  # the rows and their events are many objects, none in a cycle
                rows = self.db.execute(
                    "SELECT seq, type, time, data FROM events WHERE session_id = ? ORDER BY seq", (id,)
                ).fetchall()
                scan = scan_rows(rows)
        return StoredPrefix(_header(id, *row), scan.preserved, scan.torn_from)

    def _write_batch(self, meta: SessionHeader, rows: Sequence[_Row], materialized: bool, sync: bool = True) -> None:
        """One transaction; with ``sync=False`` its commit skips the WAL's fsync (``synchronous = NORMAL``).

        The next commit at the default ``FULL`` level syncs the WAL, earlier frames included.
        """
        id = meta.id
        if not sync:
            self.db.execute("PRAGMA synchronous = NORMAL")
        try:
            with self._transaction(f'writing session "{id}"') as db:
                if not materialized:
                    db.execute(
                        _UPSERT_SESSION,
                        (
                            id,
                            meta.version,
                            meta.created_at,
                            cwd_of(meta),
                            meta.parent_session or None,
                            None if meta.seed_length is UNSET else meta.seed_length,
                        ),
                    )
                db.executemany(_INSERT_EVENT, rows)
        finally:
            if not sync:
                self.db.execute("PRAGMA synchronous = FULL")

    def _sync(self, id: str) -> None:
        with self._storage(f'syncing session "{id}"'):
            self.db.execute("PRAGMA wal_checkpoint(FULL)")

    def _repair(self, id: str, torn_marker: object, closers: Sequence[_Row]) -> None:
        with self._transaction(f'repairing session "{id}"') as db:
            if torn_marker is not MISSING:
                db.execute("DELETE FROM events WHERE session_id = ? AND seq >= ?", (id, cast(int, torn_marker)))
                self.own_ctx.logger.warn(
                    '%s: removed a torn tail of session "%s" (events from seq %d on)', self.path, id, torn_marker
                )
            db.executemany(_INSERT_EVENT, closers)

    def _delete(self, id: str) -> None:
        with self._storage(f'deleting session "{id}"'):
            self.db.execute("DELETE FROM sessions WHERE id = ?", (id,))

    def _headers(self) -> builtins.list[SessionHeader]:
        with self._storage("listing sessions"):
            rows = self.db.execute(
                "SELECT id, version, created_at, cwd, parent_session, seed_length FROM sessions ORDER BY rowid"
            ).fetchall()
        return [_header(*row) for row in rows]

    # ------------------------------------------------------------------ storage hooks
    async def load_stored(self, id: str) -> StoredPrefix | None:
        return await self._run(f'reading session "{id}"', partial(self._read, id))

    async def load_live(self, id: str, cwd: str | None) -> StoredPrefix | None:
        return await self._run(f'reading session "{id}"', partial(self._read, id))

    async def change_mark(self, id: str) -> object:
        """``PRAGMA data_version`` (moves on another connection's commit) and this connection's own changes."""
        return await self._run(f'polling session "{id}"', self._mark)

    def _mark(self) -> object:
        with self._storage("polling the database"):
            (version,) = self.db.execute("PRAGMA data_version").fetchone()
        return (version, self.db.total_changes)

    async def append_batch(self, meta: SessionHeader, events: Sequence[SessionEvent], materialized: bool) -> None:
        rows = _rows(meta.id, events)
        await self._run(f'writing session "{meta.id}"', partial(self._write_batch, meta, rows, materialized))

    async def write_batch(self, meta: SessionHeader, events: Sequence[SessionEvent], materialized: bool) -> None:
        rows = _rows(meta.id, events)
        work = partial(self._write_batch, meta, rows, materialized, False)
        await self._run(f'writing session "{meta.id}"', work)

    async def sync_log(self, meta: SessionHeader) -> None:
        """Checkpoint the WAL into the database file (synced), covering every unsynced commit."""
        await self._run(f'syncing session "{meta.id}"', partial(self._sync, meta.id))

    async def commit_repair(self, meta: SessionHeader, torn_marker: object, closers: Sequence[SessionEvent]) -> None:
        id = meta.id
        await self._run(f'repairing session "{id}"', partial(self._repair, id, torn_marker, _rows(id, closers)))

    async def delete_stored(self, id: str) -> None:
        await self._run(f'deleting session "{id}"', partial(self._delete, id))

    async def list(self) -> builtins.list[SessionHeader]:
        return await self._run("listing sessions", self._headers)

    async def lock_writer(self, id: str) -> None:
        """Hold ``<path>.locks/<hash of the id>.lock`` (none for ``:memory:``, which no other process sees)."""
        if self.path != MEMORY_PATH:
            self.locks.acquire(id)

    async def release_writer(self, id: str) -> None:
        """Let go of the lock of ``id`` (nothing is held for an in-memory database)."""
        self.locks.release(id)

    async def close(self) -> None:
        """Release the writer locks, close the connection on its worker thread, stop the worker (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self.locks.close()
        try:
            await self._offload.run(self.db.close)  # after every piece handed over before it
        finally:
            self._worker.shutdown()
