"""SessionPersistencePostgres: one row per event in a PostgreSQL database."""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import itertools
import os
import socket
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from typing import Any, TypeAlias, cast

import psycopg
from msgspec import UNSET
from psycopg.conninfo import conninfo_to_dict
from psycopg.errors import UniqueViolation
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel, ConfigDict, Field

from dsh.core.persistence import (
    MISSING,
    CoordinatedPersistence,
    PersistenceError,
    StoredPrefix,
    continuing,
    cwd_of,
    data_text,
    not_stored,
    parse_event_rows,
    run_blocking,
)
from dsh.core.session import SessionEvent, SessionHeader
from dsh.kernel import Context
from dsh.plugins.persistence_postgres.leases import Leases
from dsh.plugins.persistence_postgres.schema import Statements, migrate
from dsh.plugins.persistence_sqlite import scan_rows

FOLLOW_RECHECK_S = 5.0
"""How long a follower waits for a notification before it reads the log again anyway."""

CONNECT_TIMEOUT_S = 10
"""How long opening a connection (or the pool's first one) may take before the hook fails."""

_Connection: TypeAlias = psycopg.AsyncConnection[tuple[Any, ...]]
_Row: TypeAlias = tuple[str, int, str, int, str]
"""An ``events`` row to insert: ``(session_id, seq, type, time, data)``."""


class PostgresConfig(BaseModel):
    """``url``: a libpq URL or conninfo string (``postgresql://user@host/db``, ``?host=/socket/dir``);
    ``pg_schema``: the PostgreSQL schema holding the store's tables; ``pool_size``: the
    most connections the backend opens; ``lease_s``: how long a writer's lease on a
    session lasts without renewal (it is renewed every third of that)."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1)
    pg_schema: str = Field(default="dsh", pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    pool_size: int = Field(default=4, ge=1, le=64)
    lease_s: float = Field(default=30.0, gt=0, le=3600)


def describe_url(url: str) -> str:
    """Where ``url`` points (host, port, database, user), without its password or options."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.Error:
        return "an unparsable URL"
    shown = ", ".join(f"{key}={parts[key]}" for key in ("host", "port", "dbname", "user") if key in parts)
    return shown or "the libpq defaults"


def _header(id: str, version: int, created_at: int, cwd: str | None, parent: str | None) -> SessionHeader:
    """The header of a ``sessions`` row (a NULL column is an absent field)."""
    return SessionHeader(
        version=version,
        id=id,
        created_at=created_at,
        cwd=UNSET if cwd is None else cwd,
        parent_session=UNSET if parent is None else parent,
    )


def _rows(id: str, events: Iterable[SessionEvent]) -> list[_Row]:
    """The ``events`` rows of ``events``: each event's ``data`` encoded once, here."""
    return [(id, event.seq, event.type, event.time, data_text(event)) for event in events]


class SessionPersistencePostgres(CoordinatedPersistence):
    """The PostgreSQL ``session_persistence`` plugin (``url`` config, ``inject = ["sessions"]``).

    The constructor connects once to apply the schema migrations (see
    :func:`~dsh.plugins.persistence_postgres.schema.migrate`), so a bad URL, an
    unreachable server or a schema of a newer build fails the plugin load. The
    connection pool opens on the first hook. Every batch is one transaction (all rows
    or none), committed durably (the server's ``synchronous_commit``). Driver failures
    are raised as :class:`~dsh.core.persistence.PersistenceError` (code
    ``STORAGE_IO``, the ``psycopg.Error`` as ``__cause__``).

    One fenced writer per session: a lease per session (see
    :mod:`~dsh.plugins.persistence_postgres.leases`), claimed when a session is loaded,
    adopted, created or deleted, renewed by a background task of the backend and by
    every write, and released by :meth:`close`. A second writer on any host is refused
    while the lease lives (``SESSION_LOCKED``, naming the holder's pid and host); a
    writer whose expired lease was taken over fails its next write with ``LEASE_LOST``
    and that write stores nothing. :meth:`close` stops the renewal, releases the leases
    and closes the pool; a hook called after it fails with ``STORAGE_IO``.
    """

    name = "session-persistence-postgres"
    inject = ("sessions",)
    Config = PostgresConfig

    def __init__(self, ctx: Context, config: PostgresConfig) -> None:
        self.url = config.url
        self.where = describe_url(config.url)
        self.sql = Statements(config.pg_schema)
        with (
            self._storage("opening the session database"),
            psycopg.connect(config.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as db,
        ):
            migrate(db, config.pg_schema)
        self.pool: AsyncConnectionPool[_Connection] = AsyncConnectionPool(
            config.url,
            min_size=1,
            max_size=config.pool_size,
            open=False,
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S},
            name="dsh-sessions",
        )
        self.holder = f"dsh pid {os.getpid()} on {socket.gethostname()}"
        self.leases = Leases(config.pg_schema, self.holder, config.lease_s)
        self._renewer: asyncio.Task[None] | None = None
        self._pool_lock = asyncio.Lock()
        self._pool_open = False
        self._closed = False
        super().__init__(ctx)

    @contextmanager
    def _storage(self, action: str) -> Iterator[None]:
        try:
            yield
        except psycopg.Error as error:
            raise PersistenceError(
                f"{action} failed: {' '.join(str(error).split())} (check the PostgreSQL session store at {self.where})",
                "STORAGE_IO",
                error,
            ) from error

    async def _ready(self, action: str) -> AsyncConnectionPool[_Connection]:
        """The open pool (opened by the first caller); refuses once the backend is closed."""
        if self._closed:
            raise PersistenceError(
                f"{action} failed: the PostgreSQL session store at {self.where} is closed (its backend was disposed)",
                "STORAGE_IO",
            )
        async with self._pool_lock:
            if not self._pool_open:
                await self.pool.open(wait=True, timeout=CONNECT_TIMEOUT_S)
                self._pool_open = True
            pool = self.pool
        return pool

    @asynccontextmanager
    async def _transaction(self, action: str) -> AsyncIterator[_Connection]:
        """One transaction on a pooled connection: committed on success, rolled back on any failure."""
        with self._storage(action):
            pool = await self._ready(action)
            async with pool.connection() as db, db.transaction():
                yield db

    # ------------------------------------------------------------------ storage hooks
    async def load_stored(self, id: str) -> StoredPrefix | None:
        async with self._transaction(f'reading session "{id}"') as db:
            cursor = await db.execute(self.sql.select_session(), (id,))
            header = await cursor.fetchone()
            if header is None:
                return None
            cursor = await db.execute(self.sql.select_events(), (id,))
            rows = await cursor.fetchall()
        scan = await run_blocking(None, partial(scan_rows, cast(list[tuple[int, str, int, str]], rows)))
        return StoredPrefix(_header(id, *header), scan.preserved, scan.torn_from)

    async def load_live(self, id: str, cwd: str | None) -> StoredPrefix | None:
        return await self.load_stored(id)

    async def append_batch(self, meta: SessionHeader, events: Sequence[SessionEvent], materialized: bool) -> None:
        id = meta.id
        rows = _rows(id, events)
        async with self._transaction(f'writing session "{id}"') as db, db.cursor() as cursor:
            await self.leases.fence(db, id)
            if not materialized:
                parent = None if meta.parent_session is UNSET else meta.parent_session
                try:
                    await cursor.execute(
                        self.sql.insert_session(), (id, meta.version, meta.created_at, cwd_of(meta), parent)
                    )
                except UniqueViolation as error:
                    raise PersistenceError(
                        f'session "{id}" appeared in the PostgreSQL session store meanwhile; '
                        "load/resume it instead of creating",
                        "SESSION_EXISTS",
                        error,
                    ) from error
            await cursor.executemany(self.sql.insert_event(), rows)
            await cursor.execute(self.sql.notify(), (self.sql.channel, id))

    async def commit_repair(self, meta: SessionHeader, torn_marker: object, closers: Sequence[SessionEvent]) -> None:
        id = meta.id
        rows = _rows(id, closers)
        async with self._transaction(f'repairing session "{id}"') as db, db.cursor() as cursor:
            await self.leases.fence(db, id)
            if torn_marker is not MISSING:
                await cursor.execute(self.sql.delete_tail(), (id, cast(int, torn_marker)))
                self.own_ctx.logger.warn(
                    '%s: removed a torn tail of session "%s" (events from seq %d on)', self.where, id, torn_marker
                )
            await cursor.executemany(self.sql.insert_event(), rows)
            await cursor.execute(self.sql.notify(), (self.sql.channel, id))

    async def delete_stored(self, id: str) -> None:
        async with self._transaction(f'deleting session "{id}"') as db:
            await self.leases.fence(db, id)
            await db.execute(self.sql.delete_session(), (id,))
            await db.execute(self.sql.notify(), (self.sql.channel, id))

    async def read_after(self, id: str, after_seq: int) -> builtins.list[SessionEvent] | None:
        """The rows above ``after_seq`` only (one indexed range read), up to the first unreadable one."""
        async with self._transaction(f'reading session "{id}"') as db:
            cursor = await db.execute(self.sql.select_session(), (id,))
            if await cursor.fetchone() is None:
                return None
            cursor = await db.execute(self.sql.select_events_after(), (id, after_seq))
            rows = cast(list[tuple[int, str, int, str]], await cursor.fetchall())
        parsed = await run_blocking(None, partial(parse_event_rows, rows))
        intact = list(itertools.takewhile(lambda item: not isinstance(item, Exception), parsed))
        return continuing(cast(list[SessionEvent], intact), after_seq)

    async def follow(self, id: str, after_seq: int = -1) -> AsyncGenerator[SessionEvent, None]:
        """Follow ``id`` by ``LISTEN``: each committed write of it notifies (in its transaction), then it is read.

        One connection of its own (outside the pool) listens on the store's channel
        before the first read, so no commit falls between the read and the wait; the
        log is also read again every :data:`FOLLOW_RECHECK_S` without a notification.
        The guarantees are ``SessionPersistence.follow``'s.
        """
        with self._storage(f'following session "{id}"'):
            listener = await psycopg.AsyncConnection.connect(
                self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S
            )
        try:
            with self._storage(f'following session "{id}"'):
                await listener.execute(f'LISTEN "{self.sql.channel}"')
            last = after_seq
            events = await self.read_after(id, last)
            if events is None:
                raise not_stored(id)
            while events is not None:
                for event in events:
                    last = event.seq
                    yield event
                with self._storage(f'following session "{id}"'):
                    async for note in listener.notifies(timeout=FOLLOW_RECHECK_S):
                        if note.payload == id:
                            break
                events = await self.read_after(id, last)
        finally:
            await listener.close()

    async def list(self) -> builtins.list[SessionHeader]:
        async with self._transaction("listing sessions") as db:
            cursor = await db.execute(self.sql.select_headers())
            rows = await cursor.fetchall()
        return [_header(*row) for row in rows]

    async def lock_writer(self, id: str) -> None:
        """Claim the lease of ``id`` unless this instance holds it; the first claim starts the renewal task."""
        if id in self.leases.held:
            return
        async with self._transaction(f'claiming session "{id}"') as db:
            await self.leases.claim(db, id)
        if self._renewer is None:
            self._renewer = asyncio.get_running_loop().create_task(self._renew_leases(), name="dsh lease renewal")

    async def release_writer(self, id: str) -> None:
        """Delete the lease row of ``id`` (when this instance holds it): another host may claim it at once."""
        if id in self.leases.held:
            async with self._transaction(f'releasing session "{id}"') as db:
                await self.leases.release_one(db, id)

    async def _renew_leases(self) -> None:
        """Renew every held lease each third of the lease time, until cancelled; failures are logged."""
        logger = self.own_ctx.logger
        while True:
            await asyncio.sleep(self.leases.ttl_s / 3)
            try:
                async with self._transaction("renewing the session leases") as db:
                    lost = await self.leases.renew_all(db)
            except PersistenceError as error:
                logger.warn("%s", error)
                continue
            for id in lost:
                logger.warn('session "%s" was taken over by another writer: this process no longer writes it', id)

    async def close(self) -> None:
        """Stop the renewal, release the leases and close the pool (idempotent)."""
        if self._closed:
            return
        renewer, self._renewer = self._renewer, None
        if renewer is not None:
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
        try:
            if self.leases.held:
                async with self._transaction("releasing the session leases") as db:
                    await self.leases.release(db)
        except PersistenceError as error:  # the leases expire by themselves
            self.own_ctx.logger.warn("%s", error)
        finally:
            self._closed = True
            await self.pool.close()
