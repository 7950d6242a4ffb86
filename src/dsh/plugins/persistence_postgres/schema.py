"""The PostgreSQL schema of the session store, its migrations and its statements.

Every table lives in one PostgreSQL schema of its own (``dsh`` unless configured), so
the store can share a database with other applications:

* ``schema_version``: one row per applied migration (``version``, ``applied_at``);
* ``sessions``: one row per *materialized* session (written with its first events):
  the header fields, the parent session (lineage) and an identity ``position`` that
  orders :meth:`list`;
* ``events``: one row per event keyed ``(session_id, seq)``; ``data`` is the event's
  ``data`` as the exact compact JSON text of its JSONL line (``text``, never ``jsonb``,
  which would reorder keys);
* ``leases``: the writer lease of each claimed session (see
  :mod:`~dsh.plugins.persistence_postgres.leases`).

:func:`migrate` applies the missing migrations in one transaction under a
transaction-scoped advisory lock, so it is idempotent and any number of processes may
start at once. A database migrated by a newer build (a version this build does not
know) is refused, never downgraded.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Final

import psycopg

from dsh.core.persistence import PersistenceError

_MIGRATIONS: Final = (
    """
    CREATE TABLE {s}.sessions (
      id text PRIMARY KEY,
      position bigint GENERATED ALWAYS AS IDENTITY,
      version integer NOT NULL,
      created_at bigint NOT NULL,
      cwd text,
      parent_session text
    );
    CREATE TABLE {s}.events (
      session_id text NOT NULL REFERENCES {s}.sessions (id) ON DELETE CASCADE,
      seq integer NOT NULL,
      type text NOT NULL,
      time bigint NOT NULL,
      data text NOT NULL,
      PRIMARY KEY (session_id, seq)
    );
    CREATE TABLE {s}.leases (
      session_id text PRIMARY KEY,
      owner text NOT NULL,
      holder text NOT NULL,
      epoch bigint NOT NULL,
      expires_at timestamptz NOT NULL
    );
    """,
)
"""Migration ``n`` (1-based) is ``_MIGRATIONS[n - 1]``; append new ones, never edit applied ones."""

SCHEMA_VERSION: Final = len(_MIGRATIONS)
"""The schema version this build writes and reads."""


def advisory_key(*parts: str) -> int:
    """A signed 64-bit advisory lock key for ``parts`` (the first 8 bytes of their SHA-256)."""
    text = "\0".join(parts).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big", signed=True)


@dataclass(frozen=True)
class Statements:
    """The SQL of the store in schema ``schema`` (an identifier the config validated)."""

    schema: str

    @property
    def qualified(self) -> str:
        return f'"{self.schema}"'

    def insert_session(self) -> str:
        return (
            f"INSERT INTO {self.qualified}.sessions (id, version, created_at, cwd, parent_session) "
            "VALUES (%s, %s, %s, %s, %s)"
        )

    def insert_event(self) -> str:
        return f"INSERT INTO {self.qualified}.events (session_id, seq, type, time, data) VALUES (%s, %s, %s, %s, %s)"

    def select_session(self) -> str:
        return f"SELECT version, created_at, cwd, parent_session FROM {self.qualified}.sessions WHERE id = %s"

    def select_events(self) -> str:
        return f"SELECT seq, type, time, data FROM {self.qualified}.events WHERE session_id = %s ORDER BY seq"

    def select_events_after(self) -> str:
        return (
            f"SELECT seq, type, time, data FROM {self.qualified}.events WHERE session_id = %s AND seq > %s ORDER BY seq"
        )

    @property
    def channel(self) -> str:
        """The ``LISTEN/NOTIFY`` channel of this store: one per schema, the payload a session id."""
        return "dsh_events_" + hashlib.sha256(self.schema.encode()).hexdigest()[:16]

    def notify(self) -> str:
        """Notify the followers of the session (payload) once the transaction commits."""
        return "SELECT pg_notify(%s, %s)"

    def delete_tail(self) -> str:
        return f"DELETE FROM {self.qualified}.events WHERE session_id = %s AND seq >= %s"

    def delete_session(self) -> str:
        return f"DELETE FROM {self.qualified}.sessions WHERE id = %s"

    def select_headers(self) -> str:
        return f"SELECT id, version, created_at, cwd, parent_session FROM {self.qualified}.sessions ORDER BY position"


def migrate(db: psycopg.Connection[tuple[Any, ...]], schema: str) -> int:
    """Bring schema ``schema`` of ``db`` to :data:`SCHEMA_VERSION`; return the version found before.

    ``db`` must be in autocommit mode; the whole migration is one transaction. Raises
    :class:`PersistenceError` ``SCHEMA_VERSION`` for a schema newer than this build and
    ``STORAGE_IO`` for a database whose encoding is not UTF8 (event text is UTF-8).
    Driver errors propagate.
    """
    qualified = f'"{schema}"'
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (advisory_key("dsh schema migration", schema),))
        encoding = db.info.parameter_status("server_encoding")
        if encoding != "UTF8":
            raise PersistenceError(
                f"the session database has encoding {encoding}, not UTF8 (create it with ENCODING 'UTF8')",
                "STORAGE_IO",
            )
        db.execute(f"CREATE SCHEMA IF NOT EXISTS {qualified}")
        db.execute(
            f"CREATE TABLE IF NOT EXISTS {qualified}.schema_version "
            "(version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        [(found,)] = db.execute(f"SELECT coalesce(max(version), 0) FROM {qualified}.schema_version").fetchall()
        if found > SCHEMA_VERSION:
            raise PersistenceError(
                f'the session store in schema "{schema}" has schema version {found}, newer than this build '
                f"({SCHEMA_VERSION}); upgrade dsh or point it at another schema",
                "SCHEMA_VERSION",
            )
        for version in range(found + 1, SCHEMA_VERSION + 1):
            db.execute(_MIGRATIONS[version - 1].format(s=qualified))
            db.execute(f"INSERT INTO {qualified}.schema_version (version) VALUES (%s)", (version,))
    return int(found)
