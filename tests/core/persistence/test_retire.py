"""``session/disposed`` retires a session: flushed, forgotten, its writer claim given up.

A process that hosts many sessions in turn (a batch worker, an editor's agent server)
must not keep every session it ever ran: neither its log in memory nor its writer
lock (a file descriptor, a renewed PostgreSQL lease).
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator, Sequence

import pytest

from dsh.core.persistence import MemoryConfig, MemoryPersistence, MemoryStorage, PersistenceError
from dsh.core.session import SESSION_CREATED, Session, SessionEvent, SessionHeader
from dsh.kernel import Context
from tests.core.persistence.helpers import CWD, BackendKit, Rig, meta, one_user_turn, replay, seqs, texts


class Claiming(MemoryPersistence):
    """The memory backend noting its writer claims; its appends fail while ``failure`` is set."""

    def __init__(self, ctx: Context, config: MemoryConfig) -> None:
        super().__init__(ctx, config)
        self.claims: list[str] = []
        self.releases: list[str] = []
        self.failure: Exception | None = None

    async def lock_writer(self, id: str) -> None:
        self.claims.append(id)

    async def release_writer(self, id: str) -> None:
        self.releases.append(id)

    async def append_batch(self, meta: SessionHeader, events: Sequence[SessionEvent], materialized: bool) -> None:
        if self.failure is not None:
            raise self.failure
        await super().append_batch(meta, events, materialized)


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    rig = await Rig(BackendKit("memory, noting claims", Claiming, {"store": MemoryStorage()})).start()
    yield rig
    await rig.close()


def backend(rig: Rig) -> Claiming:
    instance = rig.backend
    assert isinstance(instance, Claiming)
    return instance


async def settle(rig: Rig) -> None:
    """Wait for every retirement in flight."""
    while retiring := list(rig.backend.coordinator._retiring):
        await asyncio.wait(retiring)


async def test_a_disposed_session_is_flushed_then_forgotten_and_its_claim_released(rig: Rig) -> None:
    await rig.mount()
    fiber, session = await rig.live("s1")
    await rig.init(session)
    replay(session, one_user_turn())  # buffered: no flush yet
    await fiber.dispose()
    await settle(rig)
    assert seqs((await rig.persistence.load("s1")).events) == [0, 1, 2]  # what it logged is stored
    assert session not in rig.backend.inits
    assert backend(rig).releases == ["s1"]
    del session, fiber
    gc.collect()
    assert not [held for held in gc.get_objects() if isinstance(held, Session) and held.id == "s1"]


async def test_many_sessions_in_turn_leave_nothing_behind(rig: Rig) -> None:
    await rig.mount()
    for n in range(20):
        fiber, session = await rig.live(f"job-{n}")
        replay(session, one_user_turn())
        await rig.flush(session)
        await fiber.dispose()
    await settle(rig)
    coordinator = rig.backend.coordinator
    assert (dict(coordinator.inits), coordinator._buffers, coordinator._phases, coordinator._states) == ({}, {}, {}, {})
    assert backend(rig).releases == [f"job-{n}" for n in range(20)]


async def test_a_retired_session_is_resumed_in_the_same_process_claiming_its_id_again(rig: Rig) -> None:
    persistence = await rig.mount()
    fiber, session = await rig.live("s1")
    await rig.init(session)
    replay(session, one_user_turn())
    await fiber.dispose()
    loaded = await persistence.load("s1")  # chained after the retirement: reads what it wrote
    assert backend(rig).claims[-1] == "s1"
    assert backend(rig).releases == ["s1"]
    _fiber, resumed = await rig.live("s1", seed=loaded.events)
    await rig.init(resumed)
    replay(resumed, one_user_turn(turn=2))
    await rig.flush(resumed)
    stored = (await persistence.load("s1")).events
    assert seqs(stored) == list(range(6))
    assert texts(stored[:3]) == texts(loaded.events)


async def test_a_retired_lazy_session_gives_its_id_to_the_next_session_which_claims_it_again(rig: Rig) -> None:
    await rig.mount()
    first_fiber, first = await rig.live("s1")
    await rig.init(first)
    await first_fiber.dispose()  # never stored anything
    _fiber, second = await rig.live("s1")
    await rig.init(second)
    await settle(rig)
    assert backend(rig).releases == ["s1"]
    assert backend(rig).claims[-1] == "s1"  # the second session's own claim, after the release
    replay(second, one_user_turn())
    await rig.flush(second)
    assert seqs((await rig.persistence.load("s1")).events) == [0, 1, 2]


async def test_a_session_disposed_while_its_adoption_runs_retires_once_the_adoption_settled(rig: Rig) -> None:
    persistence = await rig.mount()
    fiber, session = await rig.live("s1", seed=one_user_turn())
    assert not rig.backend.inits[session].done()
    replay(session, one_user_turn(turn=2))
    await fiber.dispose()
    await settle(rig)
    assert seqs((await persistence.load("s1")).events) == list(range(6))  # the seed, then the buffer
    assert backend(rig).releases == ["s1"]
    assert session not in rig.backend.inits


async def test_the_claim_stays_when_the_ids_state_is_no_longer_the_sessions(rig: Rig) -> None:
    """a load of the id while its session lived replaced the state: the id is the loaded log's now"""
    persistence = await rig.mount()
    fiber, session = await rig.live("s1")
    await rig.init(session)
    replay(session, one_user_turn())
    await rig.flush(session)
    await persistence.load("s1")
    replay(session, one_user_turn(turn=2))
    await fiber.dispose()
    await settle(rig)
    assert backend(rig).releases == []
    assert seqs((await persistence.load("s1")).events) == list(range(6))  # the retirement still wrote the rest


async def test_a_failed_retirement_is_logged_and_the_session_kept_for_the_dispose_drain(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    await rig.mount()
    fiber, session = await rig.live("s1")
    await rig.init(session)
    replay(session, one_user_turn())
    backend(rig).failure = PersistenceError("disk full", "STORAGE_IO")
    with caplog.at_level(logging.WARNING):
        await fiber.dispose()
        await settle(rig)
    assert any(
        'session "s1" stays tracked until the backend closes' in record.getMessage()
        and "disk full" in record.getMessage()
        for record in caplog.records
    )
    assert session in rig.backend.inits
    assert backend(rig).releases == []
    backend(rig).failure = None
    loaded = await (await rig.remount()).load("s1")  # the drain of the old instance wrote what was kept
    assert seqs(loaded.events) == [0, 1, 2]


async def test_a_lazy_owner_that_is_never_retired_gives_its_id_to_a_live_session(rig: Rig) -> None:
    """a session adopted from outside the store (so never disposed) that stored nothing: its id is reusable"""
    await rig.mount()
    outsider = Session("s1", header=meta("s1", CWD))
    await rig.backend.coordinator.init_for(outsider)
    _fiber, session = await rig.live("s1")
    await rig.init(session)
    replay(session, one_user_turn())
    await rig.flush(session)
    assert seqs((await rig.persistence.load("s1")).events) == [0, 1, 2]


async def test_a_session_rolled_back_before_its_adoption_is_retired_without_one(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(session: Session) -> None:
        raise RuntimeError("refused")

    rig.ctx.on(SESSION_CREATED, refuse)  # before the backend's listener: the creation fails before any adoption
    await rig.mount()
    with caplog.at_level(logging.WARNING), pytest.raises(RuntimeError, match="refused"):
        rig.store.create("s1")
    await settle(rig)
    assert dict(rig.backend.inits) == {}
    assert backend(rig).releases == []
    assert not [record for record in caplog.records if "stays tracked" in record.getMessage()]
