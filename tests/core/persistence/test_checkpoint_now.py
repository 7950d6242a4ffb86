"""A checkpoint written at once: ``write_batch_now`` and when the coordinator may use it.

With nothing of the id in flight, an adopted session and a stored log, the coordinator
hands the buffer to the backend's ``write_batch_now`` and the listener returns None (the
dispatch awaits nothing); in every other case, or when the backend declines, the write
is chained as before. The backend here is the memory backend with that hook added,
recording each batch it wrote at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest

from dsh.core.persistence import MemoryConfig, MemoryPersistence, MemoryStorage, PersistenceError
from dsh.core.session import SESSION_CHECKPOINT, Session, SessionEvent, SessionHeader
from dsh.kernel import Context
from tests.core.persistence.helpers import CWD, BackendKit, Rig, meta, one_turn_log, seqs, user_message


class WritingNow(MemoryPersistence):
    """The memory backend writing a checkpoint at once, unless told to decline or fail."""

    def __init__(self, ctx: Context, config: MemoryConfig) -> None:
        super().__init__(ctx, config)
        self.now: list[list[int]] = []
        self.decline = False
        self.failure: Exception | None = None

    def write_batch_now(self, meta: SessionHeader, events: Sequence[SessionEvent]) -> bool:
        if self.decline:
            return False
        if self.failure is not None:
            raise self.failure
        self.storage.logs[meta.id][1].extend(events)
        self.now.append(seqs(events))
        return True


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    rig = await Rig(BackendKit("memory, writing at once", WritingNow, {"store": MemoryStorage()})).start()
    yield rig
    await rig.close()


def backend(rig: Rig) -> WritingNow:
    instance = rig.backend
    assert isinstance(instance, WritingNow)
    return instance


def stored(rig: Rig, id: str) -> list[int]:
    return seqs(backend(rig).storage.logs[id][1])


def say(session: Session, words: str) -> None:
    session.append("user/message", user_message(words))


async def materialized(rig: Rig, id: str = "s1") -> Session:
    """A live session, adopted, whose first event was checkpointed (the chained write creates the log).

    Mounts the backend unless it is mounted already.
    """
    if rig.fiber is None:
        await rig.mount()
    _fiber, session = await rig.live(id)
    await rig.init(session)
    say(session, "first")
    first = backend(rig).coordinator.checkpoint(session)
    assert isinstance(first, asyncio.Task)  # nothing stored yet: the new log is published by the chained write
    await first
    assert stored(rig, id) == [0]
    return session


async def test_a_checkpoint_with_nothing_in_flight_is_written_before_the_listener_returns(rig: Rig) -> None:
    session = await materialized(rig)
    say(session, "second")
    say(session, "third")
    assert backend(rig).coordinator.checkpoint(session) is None
    assert stored(rig, "s1") == [0, 1, 2]
    assert backend(rig).now == [[1, 2]]
    say(session, "fourth")
    await rig.ctx.parallel(SESSION_CHECKPOINT, session)
    assert backend(rig).now == [[1, 2], [3]]
    await rig.flush(session)  # the written events are not appended again
    assert stored(rig, "s1") == [0, 1, 2, 3]


async def test_a_checkpoint_with_nothing_buffered_writes_nothing_and_awaits_nothing(rig: Rig) -> None:
    session = await materialized(rig)
    assert backend(rig).coordinator.checkpoint(session) is None
    assert backend(rig).now == []


async def test_a_failed_write_at_once_rejects_the_checkpoint_and_loses_nothing(rig: Rig) -> None:
    session = await materialized(rig)
    say(session, "second")
    backend(rig).failure = PersistenceError("disk full", "STORAGE_IO")
    with pytest.raises(PersistenceError, match="disk full"):
        await rig.ctx.parallel(SESSION_CHECKPOINT, session)
    assert stored(rig, "s1") == [0]
    backend(rig).failure = None
    say(session, "third")
    await rig.ctx.parallel(SESSION_CHECKPOINT, session)
    assert backend(rig).now == [[1, 2]]
    assert stored(rig, "s1") == [0, 1, 2]


async def test_a_declined_write_at_once_is_chained_to_write_batch(rig: Rig) -> None:
    session = await materialized(rig)
    backend(rig).decline = True
    say(session, "second")
    pending = backend(rig).coordinator.checkpoint(session)
    assert isinstance(pending, asyncio.Task)
    await pending
    assert backend(rig).now == []
    assert stored(rig, "s1") == [0, 1]


async def test_a_checkpoint_before_the_adoption_ran_waits_for_it(rig: Rig) -> None:
    await rig.mount()
    _fiber, session = await rig.live("s1")
    say(session, "first")
    pending = backend(rig).coordinator.checkpoint(session)  # the adoption task has not started yet
    assert isinstance(pending, asyncio.Task)
    await pending
    assert stored(rig, "s1") == [0]


async def test_a_checkpoint_after_a_failed_adoption_raises_its_failure(rig: Rig) -> None:
    persistence = await rig.mount()
    await persistence.create(meta("taken", CWD))
    await persistence.append("taken", one_turn_log())
    await rig.remount()
    _fiber, intruder = await rig.live("taken")
    say(intruder, "a different conversation")
    with pytest.raises(PersistenceError, match="id collision"):
        await rig.init(intruder)
    with pytest.raises(PersistenceError, match="id collision"):
        await rig.ctx.parallel(SESSION_CHECKPOINT, intruder)
    assert backend(rig).now == []


async def test_events_a_direct_append_stored_are_not_written_again(rig: Rig) -> None:
    session = await materialized(rig)
    say(session, "second")
    await rig.persistence.append("s1", session.events[1:])
    pending = backend(rig).coordinator.checkpoint(session)  # the buffer starts before the stored end
    assert isinstance(pending, asyncio.Task)
    await pending
    assert backend(rig).now == []
    assert stored(rig, "s1") == [0, 1]


async def test_a_checkpoint_of_a_deleted_log_is_chained_and_refused(rig: Rig) -> None:
    session = await materialized(rig)
    await rig.persistence.delete("s1")
    say(session, "second")
    with pytest.raises(PersistenceError, match="not found"):
        await rig.ctx.parallel(SESSION_CHECKPOINT, session)
    assert backend(rig).now == []
