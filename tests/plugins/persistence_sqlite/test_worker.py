"""The SQLite backend's connection lives on one worker thread of the backend (off the event loop)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from dsh.core.persistence import PersistenceError
from dsh.plugins.persistence_sqlite import SessionPersistenceSqlite
from tests.core.persistence.helpers import CWD, Rig, meta, one_turn_log, seqs, short_turn
from tests.plugins.persistence_sqlite.test_sqlite import stored_seqs

WAIT = 30.0


def sqlite_backend(rig: Rig) -> SessionPersistenceSqlite:
    backend = rig.backend
    assert isinstance(backend, SessionPersistenceSqlite)
    return backend


async def test_every_statement_runs_on_the_backends_one_worker_thread(rig: Rig) -> None:
    """(the connection is used from a single thread, never the event loop's)"""
    persistence = await rig.mount()
    backend = sqlite_backend(rig)
    threads: set[threading.Thread] = set()
    backend.db.set_trace_callback(lambda _sql: threads.add(threading.current_thread()))
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_turn_log())
    assert seqs((await persistence.load("s1")).events) == list(range(6))
    assert await persistence.list() == [meta("s1", CWD)]
    assert await persistence.has("s1") is True
    await persistence.delete("s1")
    assert len(threads) == 1
    [worker] = threads
    assert worker is not threading.current_thread()
    assert worker.name.startswith("dsh-sqlite")
    await rig.unmount()
    assert not worker.is_alive()


async def test_a_cancelled_append_hook_still_commits_its_transaction(rig: Rig, db_path: Path) -> None:
    """(cancellation never leaves a half-done batch: the transaction runs to its end)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_turn_log())
    backend = sqlite_backend(rig)
    committing, release = threading.Event(), threading.Event()

    def hold_commit(sql: str) -> None:
        if sql == "COMMIT":
            committing.set()
            assert release.wait(WAIT)

    backend.db.set_trace_callback(hold_commit)
    hook = asyncio.ensure_future(backend.append_batch(meta("s1", CWD), short_turn(2, 6), True))
    assert await asyncio.get_running_loop().run_in_executor(None, committing.wait, WAIT)
    hook.cancel()
    for _ in range(20):
        await asyncio.sleep(0)
    assert not hook.done()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await hook
    backend.db.set_trace_callback(None)
    assert [seq for seq, _type in stored_seqs(db_path, "s1")] == list(range(8))


async def test_a_closed_backend_refuses_every_hook_and_closes_once(rig: Rig) -> None:
    """(after dispose the worker is gone; a stray call fails clearly instead of hanging)"""
    await rig.mount()
    backend = sqlite_backend(rig)
    await rig.unmount()
    await backend.close()
    with pytest.raises(
        PersistenceError, match=r'reading session "s1" failed: the session database .* is closed'
    ) as raised:
        await backend.load_stored("s1")
    assert raised.value.code == "STORAGE_IO"
    with pytest.raises(PersistenceError, match="listing sessions failed"):
        await backend.list()
