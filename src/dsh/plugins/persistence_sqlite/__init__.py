"""The SQLite session backend (SPEC §4c): one row per event, one transaction per batch.

Load :class:`SessionPersistenceSqlite` with ``{"path": "<file>"}`` (or ``":memory:"``);
it registers as ``session_persistence`` and needs ``sessions``.
"""

from dsh.plugins.persistence_sqlite.plugin import SessionPersistenceSqlite, SqliteConfig
from dsh.plugins.persistence_sqlite.scan import EventRow, RowScan, scan_rows
from dsh.plugins.persistence_sqlite.schema import SCHEMA_VERSION, open_database

__all__ = [
    "SCHEMA_VERSION",
    "EventRow",
    "RowScan",
    "SessionPersistenceSqlite",
    "SqliteConfig",
    "open_database",
    "scan_rows",
]
