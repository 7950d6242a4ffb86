"""The live-tail contract every backend runs: ``SessionPersistence.follow``.

Each case takes a started, unmounted :class:`Rig`. The writer is the same backend
instance here; ``tests/cli/test_follow.py`` follows a writer in another process.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import pytest

from dsh.core.persistence import MISSING, PersistenceError
from dsh.core.session import SessionEvent
from tests.core.persistence.helpers import CWD, Rig, meta, one_user_turn, open_turn, seqs, short_turn

WAIT_S = 10.0


async def take(events: AsyncGenerator[SessionEvent, None], count: int) -> list[SessionEvent]:
    """The next ``count`` events of a follower (failing after :data:`WAIT_S` instead of hanging)."""
    return [await asyncio.wait_for(anext(events), WAIT_S) for _ in range(count)]


async def follow_yields_the_stored_log_then_each_later_batch_once_in_seq_order(rig: Rig) -> None:
    """follow: the stored log first, then every later batch as it is stored, each event once, in seq order"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_user_turn(1, 0))
    follower = persistence.follow("s1")
    try:
        assert seqs(await take(follower, 3)) == [0, 1, 2]
        await persistence.append("s1", open_turn(2, 3))
        assert seqs(await take(follower, 2)) == [3, 4]
        await persistence.append("s1", short_turn(3, 5))
        later = await take(follower, 2)
        assert seqs(later) == [5, 6]
        assert [event.type for event in later] == ["turn/start", "turn/end"]
    finally:
        await follower.aclose()


async def follow_starts_after_the_given_seq(rig: Rig) -> None:
    """follow(id, after_seq): only the events after that seq"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", [*one_user_turn(1, 0), *short_turn(2, 3)])
    follower = persistence.follow("s1", 2)
    try:
        assert seqs(await take(follower, 2)) == [3, 4]
    finally:
        await follower.aclose()


async def follow_of_a_session_nothing_stores_is_refused(rig: Rig) -> None:
    """follow: SESSION_NOT_FOUND for an id nothing stores (a created, never-written one included)"""
    persistence = await rig.mount()
    await persistence.create(meta("lazy", CWD))
    for id in ("missing", "lazy"):
        with pytest.raises(PersistenceError) as caught:
            await take(persistence.follow(id), 1)
        assert caught.value.code == "SESSION_NOT_FOUND"


async def follow_ends_when_the_session_is_deleted(rig: Rig) -> None:
    """follow: the iterator ends once the session is deleted"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_user_turn(1, 0))
    follower = persistence.follow("s1")
    assert seqs(await take(follower, 3)) == [0, 1, 2]
    await persistence.delete("s1")
    with pytest.raises(StopAsyncIteration):
        await take(follower, 1)


async def follow_never_yields_a_torn_tail(rig: Rig) -> None:
    """follow: a torn tail (an unfinished write) is not yielded, and following repairs nothing"""
    if rig.kit.corrupt_tail is None:
        assert rig.kit.name == "memory"
        pytest.skip("the memory backend never stores a torn tail")
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", [*one_user_turn(1, 0), *open_turn(2, 3)])
    await rig.unmount()
    rig.kit.corrupt_tail("s1", CWD)
    fresh = await rig.mount()
    follower = fresh.follow("s1")
    try:
        assert seqs(await take(follower, 5)) == [0, 1, 2, 3, 4]
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(anext(follower), 0.3)
    finally:
        await follower.aclose()
    backend = rig.backend
    stored = await backend.load_stored("s1")
    assert stored is not None
    assert stored.torn_marker is not MISSING
    assert seqs(stored.events) == [0, 1, 2, 3, 4]


FOLLOW_CONTRACT = [
    follow_yields_the_stored_log_then_each_later_batch_once_in_seq_order,
    follow_starts_after_the_given_seq,
    follow_of_a_session_nothing_stores_is_refused,
    follow_ends_when_the_session_is_deleted,
    follow_never_yields_a_torn_tail,
]
