"""Every ``EARLY_WRITE`` events of a session (at its id's phase) the buffer is written, without a checkpoint.

The early write is the checkpoint's write at once (``write_batch_now``): a long stream
is written a batch at a time while it streams instead of all at its next checkpoint.
Where that write cannot happen (a log not stored yet, a backend that declines) the
events wait for the checkpoint as before; a failed early write loses nothing.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import AsyncIterator

import pytest

from dsh.core.persistence import EARLY_WRITE, MemoryStorage, PersistenceError, early_write_phase
from dsh.core.session import SESSION_CHECKPOINT
from tests.core.persistence.helpers import BackendKit, Rig
from tests.core.persistence.test_checkpoint_now import WritingNow, backend, materialized, say, stored


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    rig = await Rig(BackendKit("memory, writing at once", WritingNow, {"store": MemoryStorage()})).start()
    yield rig
    await rig.close()


def first_boundary(id: str, after: int) -> int:
    """The seq of the first event after seq ``after`` that ends an early-write batch of session ``id``."""
    return next(
        n for n in range(after + 1, after + EARLY_WRITE + 1) if (n + 1 + early_write_phase(id)) % EARLY_WRITE == 0
    )


def test_the_phase_is_a_stable_hash_of_the_id_spread_over_every_slot() -> None:
    assert early_write_phase("s1") == 48  # CRC-32: the same in every process (no per-process hash seed)
    slots = Counter(early_write_phase(f"agent-{n}") for n in range(1000))
    assert sorted(slots) == list(range(EARLY_WRITE))  # a thousand sessions fill every slot...
    assert max(slots.values()) <= 2 * 1000 // EARLY_WRITE  # ...and none holds twice its share


async def test_the_buffer_is_written_at_the_batch_boundary_of_its_phase(rig: Rig) -> None:
    session = await materialized(rig)  # seq 0 stored
    boundary = first_boundary("s1", 0)
    for n in range(1, boundary):
        say(session, f"word {n}")
    assert stored(rig, "s1") == [0]  # below the boundary: still buffered
    say(session, "the last of a batch")
    assert stored(rig, "s1") == list(range(boundary + 1))
    assert backend(rig).now == [list(range(1, boundary + 1))]
    for n in range(EARLY_WRITE):  # a whole batch later: the next early write
        say(session, f"more {n}")
    assert backend(rig).now[-1] == list(range(boundary + 1, boundary + EARLY_WRITE + 1))
    say(session, "after the batch")
    await rig.ctx.parallel(SESSION_CHECKPOINT, session)  # the checkpoint writes only what is left
    assert backend(rig).now[-1] == [boundary + EARLY_WRITE + 1]
    await rig.flush(session)
    assert stored(rig, "s1") == list(range(boundary + EARLY_WRITE + 2))


async def test_sessions_started_together_write_early_at_different_events(rig: Rig) -> None:
    """streams in lockstep: each session's early write falls at its own phase, not all in one chunk"""
    sessions = [await materialized(rig, f"lockstep-{n}") for n in range(8)]
    phases = {early_write_phase(session.header.id) for session in sessions}
    assert len(phases) > 1
    writes_per_step: list[int] = []
    for step in range(EARLY_WRITE):
        before = len(backend(rig).now)
        for session in sessions:
            say(session, f"chunk {step}")
        writes_per_step.append(len(backend(rig).now) - before)
    assert sum(writes_per_step) == len(sessions)  # each wrote once in a batch's worth of chunks...
    assert max(writes_per_step) < len(sessions)  # ...not all at the same one


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
