"""A buffer that reaches a multiple of ``EARLY_WRITE`` events is written then, without a checkpoint.

The early write is the checkpoint's write at once (``write_batch_now``): a long stream
is written a batch at a time while it streams instead of all at its next checkpoint.
Where that write cannot happen (a log not stored yet, a backend that declines) the
events wait for the checkpoint as before; a failed early write loses nothing.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from dsh.core.persistence import EARLY_WRITE, MemoryStorage, PersistenceError
from dsh.core.session import SESSION_CHECKPOINT
from tests.core.persistence.helpers import BackendKit, Rig
from tests.core.persistence.test_checkpoint_now import WritingNow, backend, materialized, say, stored


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    rig = await Rig(BackendKit("memory, writing at once", WritingNow, {"store": MemoryStorage()})).start()
    yield rig
    await rig.close()


async def test_the_buffer_is_written_when_it_reaches_early_write_events(rig: Rig) -> None:
    session = await materialized(rig)
    for n in range(EARLY_WRITE - 1):
        say(session, f"word {n}")
    assert stored(rig, "s1") == [0]  # below the batch: still buffered
    say(session, "the last of a batch")
    assert stored(rig, "s1") == list(range(EARLY_WRITE + 1))
    assert backend(rig).now == [list(range(1, EARLY_WRITE + 1))]
    say(session, "after the batch")
    await rig.ctx.parallel(SESSION_CHECKPOINT, session)  # the checkpoint writes only what is left
    assert backend(rig).now[-1] == [EARLY_WRITE + 1]
    await rig.flush(session)
    assert stored(rig, "s1") == list(range(EARLY_WRITE + 2))


async def test_a_session_not_stored_yet_keeps_its_events_for_the_checkpoint(rig: Rig) -> None:
    await rig.mount()
    _fiber, session = await rig.live("s1")
    await rig.init(session)
    for n in range(EARLY_WRITE * 2):
        say(session, f"word {n}")
    assert "s1" not in backend(rig).storage.logs  # no log yet: the events wait for the first checkpoint
    assert backend(rig).now == []
    await rig.flush(session)
    assert stored(rig, "s1") == list(range(EARLY_WRITE * 2))


async def test_a_declining_backend_gets_the_events_at_the_checkpoint(rig: Rig) -> None:
    session = await materialized(rig)
    backend(rig).decline = True
    for n in range(EARLY_WRITE):
        say(session, f"word {n}")
    assert stored(rig, "s1") == [0]
    await rig.ctx.parallel(SESSION_CHECKPOINT, session)
    assert stored(rig, "s1") == list(range(EARLY_WRITE + 1))


async def test_a_failed_early_write_is_logged_and_loses_nothing(rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    session = await materialized(rig)
    backend(rig).failure = PersistenceError("disk full", "STORAGE_IO")
    with caplog.at_level(logging.WARNING):
        for n in range(EARLY_WRITE):
            say(session, f"word {n}")  # the append itself does not fail
    assert len(session.events) == EARLY_WRITE + 1
    assert stored(rig, "s1") == [0]
    assert any("early write" in record.getMessage() and "disk full" in record.getMessage() for record in caplog.records)
    backend(rig).failure = None
    await rig.ctx.parallel(SESSION_CHECKPOINT, session)
    assert stored(rig, "s1") == list(range(EARLY_WRITE + 1))
