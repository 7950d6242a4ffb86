"""SessionPersistenceSqlite: scan_rows, durability, schema and edge cases (SPEC §4c)."""

# Tests inspect small local files synchronously on purpose.

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import cast

import pytest
from msgspec import UNSET

from dsh.core.persistence import MISSING, SESSION_PERSISTENCE, MemoryPersistence, PersistenceError, data_text
from dsh.core.session import SessionEvent, SessionStore
from dsh.kernel import ConfigError, Context, KernelError
from dsh.plugins.persistence_sqlite import (
    SCHEMA_VERSION,
    EventRow,
    RowScan,
    SessionPersistenceSqlite,
    open_database,
    scan_rows,
)
from dsh.plugins.persistence_sqlite.schema import _upgrade as upgrade
from tests.core.persistence.helpers import (
    CWD,
    BackendKit,
    Rig,
    event,
    meta,
    one_turn_log,
    one_user_turn,
    open_turn,
    replay,
    seqs,
    short_turn,
    texts,
    turn_start,
    types,
    user_message,
)
from tests.plugins.persistence_sqlite.conftest import insert_torn_row


def rows_of(events: list[SessionEvent]) -> list[EventRow]:
    return [(item.seq, item.type, item.time, data_text(item)) for item in events]


@contextmanager
def raw(path: Path) -> Iterator[sqlite3.Connection]:
    """A plain connection to the database file, outside any backend."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        yield db
    finally:
        db.close()


def stored_seqs(path: Path, id: str) -> list[tuple[int, str]]:
    with raw(path) as db:
        return db.execute("SELECT seq, type FROM events WHERE session_id = ? ORDER BY seq", (id,)).fetchall()


# --- describe "scanRows"
def test_preserves_the_full_log_when_it_ends_exactly_on_a_turn_end_no_torn_tail() -> None:
    """preserves the full log when it ends exactly on a turn/end (no torn tail)"""
    scan = scan_rows(rows_of(one_turn_log()))
    assert texts(scan.preserved) == texts(one_turn_log())
    assert scan.torn_from is MISSING


def test_preserves_the_real_events_of_an_interrupted_turn_after_the_last_turn_end() -> None:
    """PRESERVES the real events of an interrupted turn after the last turn/end"""
    written = [*one_turn_log(), *open_turn(2, 6)]
    scan = scan_rows(rows_of(written))
    assert seqs(scan.preserved) == list(range(8))
    assert scan.torn_from is MISSING


def test_preserves_the_contiguous_prefix_and_flags_a_torn_tail_at_a_seq_gap() -> None:
    """preserves the contiguous prefix and flags a torn tail at a seq gap"""
    rows = rows_of([event("turn/start", 0, turn_start(1)), event("step/start", 2, {"turn": 1, "step": 1})])
    scan = scan_rows(rows)
    assert seqs(scan.preserved) == [0]
    assert scan.torn_from == 1


def test_an_empty_log_preserves_nothing_and_has_no_torn_tail() -> None:
    """an empty log preserves nothing and has no torn tail"""
    scan = scan_rows([])
    assert scan == RowScan([])
    assert scan.torn_from is MISSING


def test_throws_on_a_seq_gap_inside_the_committed_region_before_the_last_turn_end() -> None:
    """throws on a seq gap inside the committed region (before the last turn/end)"""
    log = one_turn_log()
    rows = [rows_of(log)[0], *((seq + 1, kind, time, data) for seq, kind, time, data in rows_of(log)[1:])]
    with pytest.raises(
        PersistenceError, match=r"corrupt session log: seq gap in committed region \(expected 1, got 2\)"
    ) as raised:
        scan_rows(rows)
    assert raised.value.code == "CORRUPT_LOG"


def test_throws_on_an_unparsable_row_inside_the_committed_region() -> None:
    """throws on an unparsable row inside the committed region"""
    rows = rows_of(one_turn_log())
    rows[2] = (2, "step/start", 0, "{not json")
    with pytest.raises(PersistenceError, match="corrupt session log: unparsable committed event at seq 2") as raised:
        scan_rows(rows)
    assert raised.value.__cause__ is not None


def test_tolerates_an_unparsable_torn_tail_row_after_the_last_turn_end() -> None:
    """tolerates an unparsable torn-tail row after the last turn/end"""
    rows = [*rows_of(one_turn_log()), (6, "turn/end", 0, "{torn"), (7, "turn/start", 0, "[]")]
    scan = scan_rows(rows)
    assert seqs(scan.preserved) == list(range(6))
    assert scan.torn_from == 6


# --- describe "SessionPersistenceSqlite: durability and crash semantics"
async def test_an_interrupted_turn_rows_after_the_last_turn_end_is_preserved_and_closed_during_load(
    rig: Rig,
) -> None:
    """an interrupted turn (rows after the last turn/end) is PRESERVED and closed during load"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    written = [*one_turn_log(), *open_turn(2, 6)]
    await persistence.append("s1", written)
    loaded = await (await rig.remount()).load("s1")
    assert texts(loaded.events[:8]) == texts(written)
    assert types(loaded.events[8:]) == ["step/end", "turn/end"]


async def test_load_durably_closes_the_interrupted_turn_the_synthetic_closers_are_on_disk_after_load(
    rig: Rig, db_path: Path
) -> None:
    """load() durably closes the interrupted turn: the synthetic closers are on disk after load"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", [*one_turn_log(), event("turn/start", 6, turn_start(2))])
    await persistence.load("s1")
    stored = stored_seqs(db_path, "s1")
    assert [seq for seq, _type in stored] == list(range(8))
    assert stored[-1] == (7, "turn/end")


async def test_all_tail_load_a_session_whose_only_turn_never_closed_is_preserved_and_closed_on_load(
    rig: Rig,
) -> None:
    """all-tail load: a session whose only turn never closed is preserved and closed on load"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", open_turn(1, 0))
    fresh = await rig.remount()
    loaded = await fresh.load("s1")
    assert types(loaded.events) == ["turn/start", "step/start", "step/end", "turn/end"]
    assert await fresh.list() == [meta("s1", CWD)]
    assert await fresh.has("s1") is True


@pytest.mark.parametrize("version", [1, 4])
def test_rejects_opening_a_database_whose_schema_version_is_not_the_current_build_newer_or_older(
    tmp_path: Path, version: int
) -> None:
    """rejects opening a database whose schema version is not the current build (newer OR older)"""
    path = tmp_path / "other.db"
    with raw(path) as db:
        db.execute(f"PRAGMA user_version = {version}")
    with pytest.raises(
        PersistenceError, match=rf"has schema version {version}, incompatible with this build \(3\)"
    ) as raised:
        open_database(str(path))
    assert raised.value.code == "SCHEMA_VERSION"
    with raw(path) as db:
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == []


async def test_a_corrupt_json_row_in_the_uncommitted_tail_is_discarded_on_load_not_unloadable(
    rig: Rig, db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """a corrupt-JSON row in the uncommitted tail is discarded on load (said once, naming the database)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_turn_log())
    await rig.unmount()
    insert_torn_row(db_path, "s1")
    fresh = await rig.mount()
    loaded = await fresh.load("s1")
    assert seqs(loaded.events) == list(range(6))
    assert [seq for seq, _type in stored_seqs(db_path, "s1")] == list(range(6))
    await fresh.append("s1", short_turn(2, 6))
    assert seqs((await fresh.load("s1")).events) == list(range(8))
    warned = [record.getMessage() for record in caplog.records if "torn tail" in record.getMessage()]
    assert warned == [f'{db_path}: removed a torn tail of session "s1" (events from seq 6 on)']


async def test_append_rolls_back_the_whole_batch_on_a_mid_batch_seq_collision_transaction(
    rig: Rig, db_path: Path
) -> None:
    """append rolls back the whole batch on a mid-batch seq collision (transaction)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_turn_log())
    with raw(db_path) as db:
        db.execute("INSERT INTO events VALUES ('s1', 7, 'x/out-of-band', 0, '{}')")
    with pytest.raises(PersistenceError, match="UNIQUE constraint failed") as raised:
        await persistence.append("s1", [*short_turn(2, 6), event("user/message", 8, user_message("x"))])
    assert raised.value.code == "STORAGE_IO"
    assert isinstance(raised.value.__cause__, sqlite3.IntegrityError)
    assert [seq for seq, _type in stored_seqs(db_path, "s1")] == [0, 1, 2, 3, 4, 5, 7]


async def test_persists_across_separate_backend_instances_over_the_same_file(rig: Rig) -> None:
    """persists across separate backend instances over the same file"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD, parentSession="p"))
    await persistence.append("s1", one_turn_log())
    fresh = await rig.remount()
    loaded = await fresh.load("s1")
    assert loaded.meta == meta("s1", CWD, parentSession="p")
    assert texts(loaded.events) == texts(one_turn_log())


def test_exposes_the_schema_version_constant() -> None:
    """exposes the schema version constant"""
    assert SCHEMA_VERSION == 3


_V2_SCHEMA = """
CREATE TABLE sessions (id TEXT PRIMARY KEY, version INTEGER NOT NULL, created_at INTEGER NOT NULL,
  cwd TEXT, parent_session TEXT) STRICT;
CREATE TABLE events (session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE, seq INTEGER NOT NULL,
  type TEXT NOT NULL, time INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (session_id, seq)) STRICT;
INSERT INTO sessions VALUES ('old', 1, 1000, '/w', 'p');
PRAGMA user_version = 2;
"""


async def test_a_version_2_database_gains_the_seed_length_column_and_keeps_its_sessions(
    db_path: Path, kit: BackendKit
) -> None:
    """(a v2 database, written before fork lineage, is upgraded in place once; its rows stay)"""
    db_path.parent.mkdir(parents=True)
    with raw(db_path) as db:
        db.executescript(_V2_SCHEMA)
    opened = open_database(str(db_path))
    try:
        assert opened.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        upgrade(opened)  # a second upgrader (another process) finds nothing to do
        assert opened.execute("SELECT id, seed_length FROM sessions").fetchall() == [("old", None)]
    finally:
        opened.close()
    rig = await Rig(kit).start()
    try:
        persistence = await rig.mount()
        assert await persistence.list() == [meta("old", CWD, parentSession="p")]
        await persistence.create(meta("fork", CWD, parentSession="old", seedLength=6))
        await persistence.append("fork", one_turn_log())
        fresh = await rig.remount()
        assert (await fresh.load("fork")).meta == meta("fork", CWD, parentSession="old", seedLength=6)
    finally:
        await rig.close()


def test_a_failed_upgrade_is_rolled_back_and_reported(tmp_path: Path) -> None:
    """(a v2 stamp without the v2 tables: the upgrade fails, nothing changes)"""
    path = tmp_path / "broken.db"
    with raw(path) as db:
        db.execute("PRAGMA user_version = 2")
    with pytest.raises(PersistenceError, match="cannot open the session database") as raised:
        open_database(str(path))
    assert raised.value.code == "STORAGE_IO"
    with raw(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (2,)


# --- describe "SessionPersistenceSqlite: edge cases"
async def test_append_rolls_back_and_rethrows_when_an_event_insert_fails_inside_the_transaction(
    db_path: Path,
) -> None:
    """append rolls back and rethrows when an event INSERT fails inside the transaction"""
    contexts = [Context(), Context()]
    try:
        for ctx in contexts:
            await ctx.plugin(SessionStore)
            await ctx.plugin(SessionPersistenceSqlite, {"path": str(db_path)})
        fresh, stale = (cast(SessionPersistenceSqlite, ctx[SESSION_PERSISTENCE]) for ctx in contexts)
        await fresh.create(meta("s1", CWD))
        await fresh.append("s1", one_turn_log())
        fresh.locks.close()  # a writer that lost its lock (simulated) and writes on
        assert seqs((await stale.load("s1")).events) == list(range(6))
        await fresh.append("s1", short_turn(2, 6))
        with pytest.raises(PersistenceError, match="UNIQUE") as raised:
            await stale.append("s1", [*short_turn(3, 6), event("user/message", 8, user_message("x"))])
        assert isinstance(raised.value.__cause__, sqlite3.IntegrityError)
        assert [kind for _seq, kind in stored_seqs(db_path, "s1")][6:] == ["turn/start", "turn/end"]
        stale.locks.close()
        assert texts((await fresh.load("s1")).events[6:]) == texts(short_turn(2, 6))
    finally:
        for ctx in contexts:
            await ctx.dispose()


async def test_hmr_a_different_session_colliding_with_a_materialized_on_disk_id_is_rejected(rig: Rig) -> None:
    """HMR: a DIFFERENT session colliding with a materialized on-disk id is rejected"""
    await rig.mount()
    first_fiber, first = await rig.live("s1")
    replay(first, one_turn_log())
    await rig.flush(first)
    await rig.unmount()
    await first_fiber.dispose()
    _fiber, other = await rig.live("s1")
    other.append("user/message", user_message("not the stored conversation"))
    await rig.mount()
    with pytest.raises(PersistenceError, match="id collision"):
        await rig.flush(other)
    loaded = await rig.persistence.load("s1")
    assert texts(loaded.events) == texts(first.events)


# --- schema and storage details
def test_the_schema_is_strict_with_foreign_keys_and_wal(tmp_path: Path) -> None:
    """(schema: STRICT tables, foreign keys on, WAL, user_version stamped 3)"""
    path = tmp_path / "fresh.db"
    db = open_database(str(path))
    try:
        assert db.execute("PRAGMA foreign_keys").fetchone() == (1,)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        tables = dict(db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall())
        assert set(tables) == {"sessions", "events"}
        for sql in tables.values():
            assert sql.rstrip().endswith("STRICT")
        assert "ON DELETE CASCADE" in tables["events"]
        assert "PRIMARY KEY (session_id, seq)" in tables["events"]
        with pytest.raises(sqlite3.IntegrityError, match="cannot store TEXT value in INTEGER column"):
            db.execute("INSERT INTO sessions VALUES ('x', 'one', 0, NULL, NULL, NULL)")
    finally:
        db.close()
    reopened = open_database(str(path))
    reopened.close()


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    """(opening garbage fails with a message naming the path and the fix)"""
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not an sqlite database" * 100)
    with pytest.raises(PersistenceError, match=r"cannot open the session database at .*garbage\.db") as raised:
        open_database(str(path))
    assert raised.value.code == "STORAGE_IO"
    assert isinstance(raised.value.__cause__, sqlite3.DatabaseError)


def test_an_unreachable_path_is_a_clear_error(tmp_path: Path) -> None:
    """(the driver cannot even open the file)"""
    with pytest.raises(PersistenceError, match="cannot open the session database") as raised:
        open_database(str(tmp_path / "missing-dir" / "x.db"))
    assert isinstance(raised.value.__cause__, FileNotFoundError)


async def test_parent_directories_are_created_private_and_the_path_made_absolute(
    rig: Rig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(path: made absolute once, missing parents created with mode 0700)"""
    monkeypatch.chdir(tmp_path)
    rig.kit.config = {"path": "a/b/sessions.db"}
    await rig.mount()
    backend = rig.backend
    assert isinstance(backend, SessionPersistenceSqlite)
    assert backend.path == str(tmp_path / "a" / "b" / "sessions.db")
    for directory in (tmp_path / "a", tmp_path / "a" / "b"):
        assert directory.stat().st_mode & 0o777 == 0o700
    assert backend.name == "session-persistence-sqlite"


async def test_a_path_below_a_regular_file_fails_the_plugin_load_clearly(rig: Rig, tmp_path: Path) -> None:
    """(the database directory cannot be created)"""
    (tmp_path / "blocker").write_text("a file")
    rig.kit.config = {"path": str(tmp_path / "blocker" / "sub" / "x.db")}
    with pytest.raises(PersistenceError, match="cannot create the directory of the session database") as raised:
        await rig.mount()
    assert raised.value.code == "STORAGE_IO"
    assert rig.ctx.get(SESSION_PERSISTENCE) is None


async def test_a_refused_registration_closes_the_database(rig: Rig, db_path: Path) -> None:
    """(rollback: a backend that cannot register leaves no open handle and no listener)"""
    await rig.ctx.plugin(MemoryPersistence)
    with pytest.raises(KernelError, match="already provided"):
        await rig.ctx.plugin(SessionPersistenceSqlite, {"path": str(db_path)})
    assert isinstance(rig.ctx.get(SESSION_PERSISTENCE), MemoryPersistence)
    assert db_path.exists()
    assert not Path(f"{db_path}-wal").exists(), "the refused backend left its connection open"


async def test_null_columns_become_absent_header_keys_and_delete_cascades(rig: Rig, db_path: Path) -> None:
    """(NULL cwd/parent_session map to absent keys; deleting a session removes its events)"""
    persistence = await rig.mount()
    await persistence.create(meta("bare"))
    await persistence.append("bare", one_user_turn())
    listed = await persistence.list()
    assert listed == [meta("bare")]
    assert listed[0].cwd is UNSET
    assert (await persistence.load("bare")).meta.parent_session is UNSET
    await persistence.create(meta("child", CWD, parentSession="p"))
    await persistence.append("child", one_user_turn())
    persistence = await rig.remount()
    assert (await persistence.load("child")).meta == meta("child", CWD, parentSession="p")
    await persistence.delete("child")
    await persistence.delete("bare")
    with raw(db_path) as db:
        assert db.execute("SELECT COUNT(*) FROM events").fetchone() == (0,)
        assert db.execute("SELECT COUNT(*) FROM sessions").fetchone() == (0,)


async def test_lone_surrogates_are_stored_as_json_escapes(rig: Rig, db_path: Path) -> None:
    """(data text is valid UTF-8 even for lone surrogates)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1"))
    await persistence.append("s1", [event("user/message", 0, user_message("a\ud800b"))])
    with raw(db_path) as db:
        (data,) = db.execute("SELECT data FROM events").fetchone()
    assert "\\ud800" in data
    loaded = await (await rig.remount()).load("s1")
    assert loaded.events[0].data.content[0].text == "a\ud800b"  # type: ignore[union-attr]


async def test_a_closed_database_fails_every_hook_clearly(rig: Rig) -> None:
    """(driver failures surface as STORAGE_IO with the sqlite3 error as cause)"""
    persistence = await rig.mount()
    backend = rig.backend
    assert isinstance(backend, SessionPersistenceSqlite)
    backend.db.close()
    with pytest.raises(PersistenceError, match='reading session "s1" failed') as raised:
        await persistence.load("s1")
    assert isinstance(raised.value.__cause__, sqlite3.ProgrammingError)
    with pytest.raises(PersistenceError, match="listing sessions failed"):
        await persistence.list()
    with pytest.raises(PersistenceError, match='deleting session "s1" failed'):
        await persistence.delete("s1")
    with pytest.raises(PersistenceError, match='writing session "s2" failed'):
        await backend.append_batch(meta("s2"), one_user_turn(), False)


async def test_the_path_is_required_and_nothing_registers_without_it(rig: Rig) -> None:
    """(Config: path is required)"""
    for config in ({}, {"path": ""}, {"path": ":memory:", "root": "/x"}):
        with pytest.raises(ConfigError, match='plugin "session-persistence-sqlite": invalid config'):
            await rig.ctx.plugin(SessionPersistenceSqlite, config)
    assert rig.ctx.get(SESSION_PERSISTENCE) is None


async def test_unknown_event_and_block_types_survive_load_resume_and_append_unchanged(rig: Rig, db_path: Path) -> None:
    """(SPEC §0.6: rows of an unknown event type or holding an unknown block type are kept exactly)"""
    persistence = await rig.mount()
    await persistence.create(meta("newer", CWD))
    await persistence.append("newer", one_user_turn())
    hologram = '{"content":[{"type":"hologram","frames":[1,2.5,{"z":null}]}],"source":{"kind":"user"}}'
    telemetry = '{"cpu":[0.25,{"k":"v"}],"ok":true}'
    with raw(db_path) as db:
        db.execute(
            "INSERT INTO events (session_id, seq, type, time, data) VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?)",
            ("newer", 3, "user/message", 9, hologram, "newer", 4, "plugin/telemetry", 9, telemetry),
        )
        before = db.execute("SELECT seq, type, time, data FROM events ORDER BY seq").fetchall()
    persistence = await rig.remount()
    loaded = await persistence.load("newer")
    assert [data_text(item) for item in loaded.events[3:]] == [hologram, telemetry]
    _fiber, session = await rig.live("newer", seed=loaded.events)
    await rig.init(session)
    replay(session, one_user_turn(turn=2))
    await rig.flush(session)
    with raw(db_path) as db:
        after = db.execute("SELECT seq, type, time, data FROM events ORDER BY seq").fetchall()
    assert after[:5] == before
    assert after[5:] == rows_of(list(session.events[5:]))
    reloaded = await (await rig.remount()).load("newer")
    assert texts(reloaded.events) == texts(session.events)
