"""The PostgreSQL session backend: one row per event, one transaction per batch, one fenced writer per session.

Load :class:`SessionPersistencePostgres` with ``{"url": "postgresql://..."}`` (needs the
``postgres`` extra: ``pip install 'dsh[postgres]'``); it registers as
``session_persistence`` and needs ``sessions``.
"""

from dsh.plugins.persistence_postgres.leases import Leases
from dsh.plugins.persistence_postgres.plugin import PostgresConfig, SessionPersistencePostgres, describe_url
from dsh.plugins.persistence_postgres.schema import SCHEMA_VERSION, Statements, advisory_key, migrate

__all__ = [
    "SCHEMA_VERSION",
    "Leases",
    "PostgresConfig",
    "SessionPersistencePostgres",
    "Statements",
    "advisory_key",
    "describe_url",
    "migrate",
]
