"""Fixtures for the PostgreSQL backend tests: one private cluster per test worker, one schema per test."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from dsh.plugins.persistence_postgres import SessionPersistencePostgres
from tests.core.persistence.helpers import BackendKit, Rig
from tests.plugins.persistence_postgres.cluster import Cluster, start_cluster

_schemas = itertools.count()


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    """A private PostgreSQL server for this test worker, stopped and removed at the end."""
    running = start_cluster()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def pg_url(cluster: Cluster) -> str:
    return cluster.url()


@pytest.fixture
def pg_schema() -> str:
    """A schema name no other test of this worker uses (each test gets an empty store)."""
    return f"t{next(_schemas)}"


@contextmanager
def raw(url: str) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
    """A plain autocommit connection, outside any backend."""
    with psycopg.connect(url, autocommit=True) as db:
        yield db


def insert_torn_row(url: str, schema: str, id: str) -> None:
    """Add a row past the last seq whose data is not JSON (a crash mid-write)."""
    with raw(url) as db:
        [(last,)] = db.execute(f'SELECT max(seq) FROM "{schema}".events WHERE session_id = %s', (id,)).fetchall()
        db.execute(
            f'INSERT INTO "{schema}".events (session_id, seq, type, time, data) VALUES (%s, %s, %s, 0, %s)',
            (id, last + 1, "assistant/chunk", "{not valid json"),
        )


@pytest.fixture
def config(pg_url: str, pg_schema: str) -> dict[str, Any]:
    return {"url": pg_url, "pg_schema": pg_schema}


@pytest.fixture
def kit(config: dict[str, Any]) -> BackendKit:
    return BackendKit(
        "postgres",
        SessionPersistencePostgres,
        config,
        lambda id, _cwd: insert_torn_row(config["url"], config["pg_schema"], id),
    )


@pytest.fixture
async def rig(kit: BackendKit) -> AsyncIterator[Rig]:
    rig = await Rig(kit).start()
    yield rig
    await rig.close()
