"""SessionPersistence service, shared helpers and coordinator edges (SPEC §4.6, §4.3)."""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, ClassVar

import pytest

from dsh.core.llm import to_json
from dsh.core.persistence import (
    MISSING,
    SESSION_PERSISTENCE,
    LoadedSession,
    MemoryPersistence,
    MemoryStorage,
    PersistenceError,
    SessionPersistence,
    StoredPrefix,
    assert_serializable,
    data_text,
    escape_lone_surrogates,
    event_text,
    header_text,
    seed_covers_prefix,
)
from dsh.core.session import (
    SESSION_CREATED,
    SESSION_EVENT,
    SESSION_FLUSH,
    Session,
    SessionEvent,
    SessionHeader,
    SessionMeta,
    SessionStore,
    UntypedEvent,
    dumps_json,
    parse_session_event_line,
)
from dsh.kernel import Context, KernelError, PluginSpec
from tests.core.persistence.helpers import (
    CWD,
    RETIRED_OR_BOUND,
    BackendKit,
    Rig,
    event,
    meta,
    one_turn_log,
    one_user_turn,
    replay,
    seqs,
    text,
    texts,
    user_message,
)


@pytest.fixture
def storage() -> MemoryStorage:
    return MemoryStorage()


@pytest.fixture
async def rig(storage: MemoryStorage) -> AsyncIterator[Rig]:
    rig = await Rig(BackendKit("memory", MemoryPersistence, {"store": storage})).start()
    yield rig
    await rig.close()


class FlakyMemory(MemoryPersistence):
    """Memory storage whose next ``failures`` batch appends fail (storage failure injection)."""

    failures = 0

    async def append_batch(self, meta: SessionHeader, events: Sequence[SessionEvent], materialized: bool) -> None:
        if FlakyMemory.failures:
            FlakyMemory.failures -= 1
            raise PersistenceError("disk full", "STORAGE_IO")
        await super().append_batch(meta, events, materialized)


class GatedMemory(MemoryPersistence):
    """Memory storage whose batch appends wait for ``gate`` (a slow disk)."""

    gate: asyncio.Event

    async def append_batch(self, meta: SessionHeader, events: Sequence[SessionEvent], materialized: bool) -> None:
        await GatedMemory.gate.wait()
        await super().append_batch(meta, events, materialized)


class ClosingFails(MemoryPersistence):
    """Memory storage whose teardown fails."""

    closed = 0

    async def close(self) -> None:
        ClosingFails.closed += 1
        raise PersistenceError("close exploded", "STORAGE_IO")


@pytest.fixture(autouse=True)
def _reset_injected_failures() -> None:
    FlakyMemory.failures = 0
    ClosingFails.closed = 0


# --- describe "SessionPersistence service registration"
async def test_registers_as_ctx_session_persistence_and_is_removed_on_fiber_dispose_hmr_safety(
    rig: Rig,
) -> None:
    """registers as ctx.sessionPersistence and is removed on fiber dispose (HMR safety)"""
    before = {event.name: rig.ctx.listener_count(event) for event in (SESSION_CREATED, SESSION_EVENT, SESSION_FLUSH)}
    await rig.mount()
    service = rig.ctx.get(SESSION_PERSISTENCE)
    assert isinstance(service, SessionPersistence)
    assert isinstance(service, MemoryPersistence)
    for descriptor in (SESSION_CREATED, SESSION_EVENT, SESSION_FLUSH):
        assert rig.ctx.listener_count(descriptor) == before[descriptor.name] + 1
    fiber = rig.fiber
    assert fiber is not None
    await rig.unmount()
    assert rig.ctx.get(SESSION_PERSISTENCE) is None
    for descriptor in (SESSION_CREATED, SESSION_EVENT, SESSION_FLUSH):
        assert rig.ctx.listener_count(descriptor) == before[descriptor.name]
    assert fiber.effect_count == 0
    assert fiber.task_count == 0


async def test_round_trips_through_the_registered_service_instance(rig: Rig) -> None:
    """round-trips through the registered service instance"""
    await rig.mount()
    persistence = rig.ctx[SESSION_PERSISTENCE]
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_turn_log())
    loaded = await persistence.load("s1")
    assert isinstance(loaded, LoadedSession)
    assert loaded.meta == meta("s1", CWD)
    assert texts(loaded.events) == texts(one_turn_log())
    assert await persistence.has("s1") is True
    assert await persistence.list() == [meta("s1", CWD)]


async def test_a_second_backend_is_refused_without_leaving_anything_behind_and_the_key_stays_reusable(
    rig: Rig, storage: MemoryStorage
) -> None:
    """(rollback) a second backend is refused, leaves no listener behind, and the key is reusable afterwards"""
    first = await rig.mount()
    count = rig.ctx.listener_count(SESSION_EVENT)
    with pytest.raises(KernelError, match=r'service "session_persistence" is already provided'):
        await rig.ctx.plugin(MemoryPersistence, {"store": storage})
    assert rig.ctx.listener_count(SESSION_EVENT) == count
    assert rig.ctx.get(SESSION_PERSISTENCE) == first
    await rig.unmount()
    second = await rig.mount()
    await second.create(meta("s1"))
    await second.append("s1", one_user_turn())
    assert await second.has("s1") is True


# --- describe "shared persistence helpers"
def test_accepts_a_seed_that_reproduces_the_persisted_prefix_exactly() -> None:
    """accepts a seed that reproduces the persisted prefix exactly"""
    log = one_turn_log()
    assert seed_covers_prefix(log, log[:3]) is True
    assert seed_covers_prefix(log, log) is True
    assert seed_covers_prefix(log, []) is True
    assert seed_covers_prefix([], []) is True


def test_rejects_a_prefix_longer_than_the_seed() -> None:
    """rejects a prefix longer than the seed"""
    log = one_turn_log()
    assert seed_covers_prefix(log[:2], log[:3]) is False


def test_rejects_a_same_envelope_event_with_mutated_data() -> None:
    """rejects a same-envelope event with mutated data"""
    stored = one_turn_log()
    seed = one_turn_log()
    seed[1] = event("user/message", 1, user_message("mutated"))
    assert seed_covers_prefix(seed, stored[:1]) is True
    assert seed_covers_prefix(seed, stored[:2]) is False


def test_a_reordered_payload_does_not_cover_the_prefix() -> None:
    """(key order is part of the serialized text seedCoversPrefix compares; typed payloads have one order)"""
    stored = [event("x/custom", 0, {"turn": 1, "step": 1})]
    seed = [event("x/custom", 0, {"step": 1, "turn": 1})]
    assert seed_covers_prefix(seed, stored) is False
    assert seed_covers_prefix([event("step/start", 0, {"step": 1, "turn": 1})], one_turn_log()[2:3]) is False
    typed = [event("step/start", 0, {"step": 1, "turn": 1})]
    assert seed_covers_prefix(typed, [event("step/start", 0, {"turn": 1, "step": 1})]) is True


def test_accepts_json_serializable_event_data() -> None:
    """accepts JSON-serializable event data"""
    assert_serializable(one_turn_log())
    assert_serializable([event("x/custom", 0, {"n": None, "b": True, "f": 1.5, "nested": [[{"k": []}]]})])
    assert_serializable([])


def test_rejects_non_json_serializable_event_data_with_type_and_seq_context() -> None:
    """rejects non-JSON-serializable event data with type and seq context"""
    bad = UntypedEvent(type="x/note", seq=0, time=0, data={"content": {1, 2}})
    with pytest.raises(PersistenceError, match=r'"x/note".*seq 0') as raised:
        assert_serializable([bad])
    assert raised.value.code == "NOT_SERIALIZABLE"
    later = [*one_turn_log(), UntypedEvent(type="x/usage", seq=6, time=0, data={"usage": float("nan")})]
    with pytest.raises(PersistenceError, match=r'event "x/usage" carries non-JSON-serializable data \(seq 6\)'):
        assert_serializable(later)
    with pytest.raises(PersistenceError, match=r"cannot persist a object: append session event values"):
        assert_serializable([*one_turn_log(), object()])


def test_the_absent_torn_marker_is_a_named_sentinel_distinct_from_zero() -> None:
    """(StoredPrefix.torn_marker tests presence, not truthiness)"""
    assert repr(MISSING) == "MISSING"
    header = meta("s")
    assert StoredPrefix(header, []).torn_marker is MISSING
    assert StoredPrefix(header, [], 0).torn_marker is not MISSING


def test_escape_lone_surrogates_makes_json_text_utf8_encodable() -> None:
    """(storage text is valid UTF-8 even for lone surrogates, as JSON.stringify writes them)"""
    text = dumps_json({"t": "a\ud800b\udfffc", "ok": "é😀"})
    escaped = escape_lone_surrogates(text)
    assert escaped == '{"t":"a\\ud800b\\udfffc","ok":"é😀"}'
    escaped.encode("utf-8")
    assert escape_lone_surrogates(escaped) == escaped
    assert escape_lone_surrogates('{"ascii":"only"}') == '{"ascii":"only"}'


def test_storage_text_escapes_lone_surrogates_and_is_the_codec_text_otherwise() -> None:
    """(event_text / data_text / header_text: the codec's bytes, or JSON escapes where UTF-8 has no form)"""
    plain = event("user/message", 0, user_message("héllo"))
    assert event_text(plain) == '{"type":"user/message","seq":0,"time":0,"data":' + data_text(plain) + "}"
    assert data_text(plain) == '{"content":[{"type":"text","text":"héllo"}],"source":{"kind":"user"}}'
    odd = parse_session_event_line(
        '{"type":"user/message","seq":0,"time":0,"data":{"content":[{"type":"holo","x":"k"}],"source":{"kind":"user"}}}'
    )
    lonely = event(
        "user/message", 3, {"content": [text("a\ud800b"), {"type": "holo", "x": 1}], "source": {"kind": "user"}}
    )
    line = event_text(lonely)
    assert line == (
        '{"type":"user/message","seq":3,"time":0,"data":{"content":[{"type":"text","text":"a\\ud800b"},'
        '{"type":"holo","x":1}],"source":{"kind":"user"}}}'
    )
    assert data_text(lonely) == line[line.index('"data":') + 7 : -1]
    assert (
        event_text(odd)
        == '{"type":"user/message","seq":0,"time":0,"data":{"content":[{"type":"holo","x":"k"}],"source":{"kind":"user"}}}'
    )
    assert header_text(meta("s", CWD)) == '{"type":"session","version":1,"id":"s","createdAt":1000,"cwd":"/w"}'
    assert (
        header_text(meta("s\udc00", CWD))
        == '{"type":"session","version":1,"id":"s\\udc00","createdAt":1000,"cwd":"/w"}'
    )


# --- coordinator edges
async def test_operations_on_one_id_run_in_call_order_and_a_failure_does_not_poison_the_chain(
    rig: Rig,
) -> None:
    """(per-id serialization: call order, isolated failures)"""
    persistence = await rig.mount()
    created = persistence.create(meta("s1"))
    duplicate = persistence.create(meta("s1"))
    first = persistence.append("s1", one_user_turn())
    gap = persistence.append("s1", one_user_turn())
    loaded = persistence.load("s1")
    await created
    with pytest.raises(PersistenceError, match=r"already exists in this backend"):
        await duplicate
    await first
    with pytest.raises(PersistenceError, match=r"seq mismatch"):
        await gap
    assert seqs((await loaded).events) == [0, 1, 2]


async def test_cancelling_a_caller_does_not_cancel_its_write(rig: Rig, storage: MemoryStorage) -> None:
    """(an awaited write keeps going when its awaiter is cancelled)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1"))

    async def caller() -> None:
        await persistence.append("s1", one_user_turn())

    task = asyncio.ensure_future(caller())
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    loaded = await persistence.load("s1")
    assert seqs(loaded.events) == [0, 1, 2]
    assert seqs(storage.logs["s1"][1]) == [0, 1, 2]


async def test_dispose_waits_for_operations_still_in_flight(rig: Rig, storage: MemoryStorage) -> None:
    """(the dispose drain settles every chain before closing)"""
    GatedMemory.gate = asyncio.Event()
    rig.kit.plugin = GatedMemory
    persistence = await rig.mount()
    await persistence.create(meta("s1"))
    pending = persistence.append("s1", one_user_turn())
    unmounting = asyncio.ensure_future(rig.unmount())
    for _ in range(10):
        await asyncio.sleep(0)
    assert not unmounting.done()
    assert "s1" not in storage.logs
    GatedMemory.gate.set()
    await unmounting
    assert pending.done()
    await pending
    assert seqs(storage.logs["s1"][1]) == [0, 1, 2]


async def test_flushing_a_session_the_backend_never_saw_is_a_no_op(rig: Rig, storage: MemoryStorage) -> None:
    """(flush without an adoption and without buffered events writes nothing)"""
    await rig.mount()
    await rig.backend.coordinator.flush(Session("stranger"))
    assert storage.logs == {}


async def test_flush_skips_buffered_events_that_storage_already_holds(rig: Rig, storage: MemoryStorage) -> None:
    """(events persisted meanwhile through append are not written twice)"""
    persistence = await rig.mount()
    _fiber, session = await rig.live("s1")
    replay(session, one_user_turn())
    await rig.flush(session)
    replay(session, one_user_turn(turn=2, start=3))
    await persistence.append("s1", list(session.events[3:]))
    await rig.flush(session)
    await rig.flush(session)
    assert seqs(storage.logs["s1"][1]) == [0, 1, 2, 3, 4, 5]


async def test_a_failed_adoption_is_logged_and_the_session_is_not_persisted(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    """(an init failure is reported through the logger, then again to every flush)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_user_turn())
    await persistence.load("s1")
    caplog.set_level(logging.WARNING)
    _fiber, intruder = await rig.live("s1")
    with pytest.raises(PersistenceError, match=r"id collision"):
        await rig.init(intruder)
    await asyncio.sleep(0)
    assert 'session "s1" is not persisted' in caplog.text


async def test_a_claim_is_refused_when_the_persisted_log_vanished_from_storage(
    rig: Rig, storage: MemoryStorage
) -> None:
    """(ownerless state whose stored log was removed behind the backend's back)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_user_turn())
    await persistence.load("s1")
    del storage.logs["s1"]
    _fiber, session = await rig.live("s1", seed=one_user_turn())
    with pytest.raises(PersistenceError, match=r"already persisted with 3 event\(s\) that do not match"):
        await rig.init(session)


async def test_a_materialized_id_of_a_disposed_live_session_is_not_reclaimed(rig: Rig) -> None:
    """(a detached owner that already wrote its log: the retired id's stored log refuses a new session)"""
    await rig.mount()
    first_fiber, first = await rig.live("s1")
    replay(first, one_user_turn())
    await rig.flush(first)
    await first_fiber.dispose()
    _fiber, second = await rig.live("s1")
    with pytest.raises(PersistenceError, match=RETIRED_OR_BOUND) as raised:
        await rig.init(second)
    assert raised.value.code == "ID_COLLISION"


async def test_a_flush_failure_keeps_the_buffer_and_a_retry_persists_it(rig: Rig, storage: MemoryStorage) -> None:
    """(flush keeps buffered events when the append fails)"""
    rig.kit.plugin = FlakyMemory
    await rig.mount()
    _fiber, session = await rig.live("s1")
    replay(session, one_user_turn())
    FlakyMemory.failures = 1
    with pytest.raises(PersistenceError, match=r"disk full"):
        await rig.flush(session)
    assert "s1" not in storage.logs
    await rig.flush(session)
    assert seqs(storage.logs["s1"][1]) == [0, 1, 2]


async def test_dispose_reports_every_failed_drain_as_one_group_and_still_closes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """(AggregateError: "<backend.name> dispose failed"; close runs anyway; its failure is noted)"""
    rig = await Rig(BackendKit("memory", FlakyMemory, {})).start()
    rig.kit.plugin = type("FlakyClosing", (FlakyMemory, ClosingFails), {})
    await rig.mount()
    _one_fiber, one = await rig.live("one")
    _two_fiber, two = await rig.live("two")
    replay(one, one_user_turn())
    replay(two, one_user_turn())
    FlakyMemory.failures = 2
    ClosingFails.closed = 0
    with caplog.at_level(logging.ERROR):
        await rig.unmount()
    assert ClosingFails.closed == 1
    assert "session-persistence-memory dispose failed" in caplog.text
    group = next(
        record.exc_info[1]
        for record in caplog.records
        if record.exc_info is not None and isinstance(record.exc_info[1], ExceptionGroup)
    )
    assert isinstance(group, ExceptionGroup)
    assert [str(error) for error in group.exceptions] == ["disk full", "disk full"]
    assert any("close exploded" in note for note in group.__notes__)
    await rig.close()


async def test_a_close_failure_after_a_clean_drain_is_raised(caplog: pytest.LogCaptureFixture) -> None:
    """(a close error surfaces when nothing else failed)"""
    rig = await Rig(BackendKit("memory", ClosingFails, {})).start()
    await rig.mount()
    ClosingFails.closed = 0
    with caplog.at_level(logging.ERROR):
        await rig.unmount()
    assert ClosingFails.closed == 1
    assert "close exploded" in caplog.text
    await rig.close()


async def test_two_memory_instances_sharing_storage_never_overwrite_each_others_logs(
    storage: MemoryStorage,
) -> None:
    """(materializing an id another instance stored meanwhile is refused)"""
    left, right = Context(), Context()
    try:
        for ctx in (left, right):
            await ctx.plugin(SessionStore)
            await ctx.plugin(MemoryPersistence, {"store": storage})
        await left[SESSION_PERSISTENCE].create(meta("s1"))
        await right[SESSION_PERSISTENCE].create(meta("s1"))
        await left[SESSION_PERSISTENCE].append("s1", one_user_turn())
        with pytest.raises(PersistenceError, match=r'refusing to materialize "s1"'):
            await right[SESSION_PERSISTENCE].append("s1", one_user_turn())
        assert seqs(storage.logs["s1"][1]) == [0, 1, 2]
        assert await right[SESSION_PERSISTENCE].has("s1") is True
    finally:
        await left.dispose()
        await right.dispose()


async def test_memory_storage_shares_immutable_values_but_no_lists_with_callers(
    rig: Rig, storage: MemoryStorage
) -> None:
    """(stored values are the immutable ones appended; every list handed in or out is someone else's)"""
    persistence = await rig.mount()
    header = meta("s1")
    await persistence.create(header)
    batch = [event("user/message", 0, user_message("kept"))]
    await persistence.append("s1", batch)
    batch.clear()
    loaded = await persistence.load("s1")
    assert loaded.meta is header
    assert loaded.events[0] is storage.logs["s1"][1][0]
    with pytest.raises(AttributeError):
        loaded.meta.id = "changed"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        loaded.events[0].seq = 5  # type: ignore[misc]
    loaded.events.clear()
    again = await persistence.load("s1")
    assert texts(again.events) == texts([event("user/message", 0, user_message("kept"))])
    listed = await persistence.list()
    listed.clear()
    assert await persistence.list() == [meta("s1")]


# ------------------------------------------------------------ resume without a re-read
class CountingMemory(MemoryPersistence):
    """Memory storage that counts full reads of a stored log."""

    reads = 0

    async def load_stored(self, id: str) -> StoredPrefix | None:
        CountingMemory.reads += 1
        return await super().load_stored(id)


@pytest.fixture
async def counting(storage: MemoryStorage) -> AsyncIterator[Rig]:
    CountingMemory.reads = 0
    rig = await Rig(BackendKit("counting", CountingMemory, {"store": storage})).start()
    yield rig
    await rig.close()


async def _persisted_then_loaded(rig: Rig) -> LoadedSession:
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_turn_log())
    loaded = await persistence.load("s1")
    CountingMemory.reads = 0
    return loaded


async def test_a_session_seeded_with_the_loaded_events_themselves_is_claimed_without_a_re_read(
    counting: Rig, storage: MemoryStorage
) -> None:
    """(resume hands load()'s events over: they are the stored log, compared without reading it back)"""
    loaded = await _persisted_then_loaded(counting)
    session = counting.store.create("s1", seed=loaded.events, meta=SessionMeta(cwd=CWD))
    await counting.init(session)
    assert CountingMemory.reads == 0
    replay(session, one_user_turn(turn=2))
    await counting.flush(session)
    assert seqs(storage.logs["s1"][1]) == list(range(9))
    assert texts(storage.logs["s1"][1]) == texts(session.events)


async def test_an_equal_seed_of_other_objects_is_compared_by_value(counting: Rig, storage: MemoryStorage) -> None:
    """(a seed decoded afresh is equal to the loaded log by value: claimed, still without a re-read)"""
    loaded = await _persisted_then_loaded(counting)
    seed = [parse_session_event_line(line) for line in texts(loaded.events)]
    assert all(fresh is not old for fresh, old in zip(seed, loaded.events, strict=True))
    session = counting.store.create("s1", seed=seed, meta=SessionMeta(cwd=CWD))
    await counting.init(session)
    assert CountingMemory.reads == 0
    replay(session, one_user_turn(turn=2))
    await counting.flush(session)
    assert seqs(storage.logs["s1"][1]) == list(range(9))


async def test_a_seed_differing_from_the_loaded_log_is_an_id_collision(counting: Rig) -> None:
    """(value comparison: one changed event is enough)"""
    loaded = await _persisted_then_loaded(counting)
    seed = list(loaded.events)
    seed[1] = event("user/message", 1, user_message("something else"))
    session = counting.store.create("s1", seed=seed, meta=SessionMeta(cwd=CWD))
    with pytest.raises(PersistenceError, match=r"already persisted with 6 event\(s\) that do not match"):
        await counting.init(session)
    assert CountingMemory.reads == 0


async def test_a_claim_without_a_re_read_needs_the_loaded_session_alive(counting: Rig) -> None:
    """(once the caller dropped what load() returned, the seed is compared with storage)"""
    loaded = await _persisted_then_loaded(counting)
    events = loaded.events
    gone = weakref.ref(loaded)
    del loaded
    await asyncio.sleep(0)  # the settled chain lets go of its result
    assert gone() is None
    session = counting.store.create("s1", seed=events, meta=SessionMeta(cwd=CWD))
    await counting.init(session)
    assert CountingMemory.reads == 1


async def test_a_loaded_list_cut_short_by_its_caller_is_compared_with_storage(counting: Rig) -> None:
    """(the caller may edit what load() returned: a shortened list proves nothing)"""
    loaded = await _persisted_then_loaded(counting)
    seed = list(loaded.events)
    del loaded.events[3:]
    session = counting.store.create("s1", seed=seed, meta=SessionMeta(cwd=CWD))
    await counting.init(session)
    assert CountingMemory.reads == 1


async def test_a_seed_shorter_than_the_loaded_log_is_an_id_collision(counting: Rig) -> None:
    """(the seed is checked over the whole stored prefix; a shorter seed still collides)"""
    loaded = await _persisted_then_loaded(counting)
    session = counting.store.create("s1", seed=loaded.events[:4], meta=SessionMeta(cwd=CWD))
    with pytest.raises(PersistenceError, match=r"already persisted with 6 event\(s\) that do not match"):
        await counting.init(session)
    assert CountingMemory.reads == 0


async def test_init_references_the_sessions_own_events(rig: Rig, storage: MemoryStorage) -> None:
    """(no snapshot at adoption: the seed written for a fork is the session's logged events)"""
    await rig.mount()
    _fiber, session = await rig.live("fork", seed=one_turn_log())
    await rig.init(session)
    assert texts(storage.logs["fork"][1]) == texts(session.events)


class TornMemory(MemoryPersistence):
    """Memory storage that reports a torn tail (marker 0) on every scoped read and records repairs."""

    repairs: ClassVar[list[tuple[object, list[SessionEvent]]]] = []

    async def load_live(self, id: str, cwd: str | None) -> StoredPrefix | None:
        stored = await super().load_live(id, cwd)
        return None if stored is None else StoredPrefix(stored.meta, stored.events, 0)

    async def commit_repair(self, meta: SessionHeader, torn_marker: object, closers: Sequence[SessionEvent]) -> None:
        TornMemory.repairs.append((torn_marker, list(closers)))
        await super().commit_repair(meta, torn_marker, closers)


async def test_live_adoption_cuts_a_torn_tail_without_closing_the_open_turn(storage: MemoryStorage) -> None:
    """(HMR adoption of a stored prefix with a torn marker: truncate only, the live turn stays open)"""
    TornMemory.repairs = []
    rig = await Rig(BackendKit("memory", MemoryPersistence, {"store": storage})).start()
    try:
        await rig.mount()
        _fiber, session = await rig.live("s1")
        replay(session, one_user_turn()[:2])
        await rig.flush(session)
        await rig.unmount()
        rig.kit = BackendKit("torn", TornMemory, {"store": storage})
        await rig.mount()
        await rig.init(session)
        assert TornMemory.repairs == [(0, [])]
        session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
        await rig.flush(session)
        assert seqs(storage.logs["s1"][1]) == [0, 1, 2]
    finally:
        await rig.close()


# --- the write path buffers first, before any other session/event listener
def _listener_plugin(listener: Callable[[Session, SessionEvent], None]) -> PluginSpec:
    def apply(ctx: Context, _config: object) -> None:
        ctx.on(SESSION_EVENT, listener)

    return PluginSpec(name="session/event listener", apply=apply)


async def test_the_persisted_event_is_the_logged_value_itself_which_no_listener_can_change(
    rig: Rig, storage: MemoryStorage
) -> None:
    """(events are immutable: a listener loaded earlier cannot change what reaches storage)"""
    refused: list[Exception] = []

    def vandal(_session: Session, logged: SessionEvent) -> None:
        try:
            logged.seq = 99  # type: ignore[misc]
        except AttributeError as error:
            refused.append(error)

    await rig.ctx.plugin(_listener_plugin(vandal))
    await rig.mount()
    _fiber, session = await rig.live("s1")
    session.append("user/message", user_message("original"))
    await rig.flush(session)
    assert len(refused) == 1
    assert storage.logs["s1"][1][0] is session.events[0]
    assert to_json(storage.logs["s1"][1][0].data) == user_message("original")


async def test_an_event_a_later_listener_rejects_is_still_persisted_the_buffer_mirrors_the_log(
    rig: Rig, storage: MemoryStorage
) -> None:
    """(Session.append raises after the push: the event is in the log, so it is buffered and written, no seq gap)"""

    def veto(_session: Session, logged: SessionEvent) -> None:
        if logged.type == "user/message":
            raise ValueError("listener refused")

    await rig.ctx.plugin(_listener_plugin(veto))
    await rig.mount()
    _fiber, session = await rig.live("s1")
    with pytest.raises(ValueError, match="listener refused"):
        replay(session, one_user_turn())
    replay(session, one_user_turn()[2:])
    await rig.flush(session)
    assert texts(storage.logs["s1"][1]) == texts(session.events)
    assert seqs(session.events) == [0, 1, 2]


@pytest.mark.parametrize(
    "broken",
    [{"type": "turn/start", "seq": 0, "data": {"turn": 1}}, ("turn/start", 0, 0, {})],
)
async def test_append_rejects_a_batch_holding_no_event_value_through_its_awaitable(
    rig: Rig, storage: MemoryStorage, broken: Any
) -> None:
    """(a dict or a tuple is no event: the append rejects, nothing is stored)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1"))
    pending = persistence.append("s1", [broken])
    with pytest.raises(PersistenceError, match=r"append session event values") as raised:
        await pending
    assert raised.value.code == "NOT_SERIALIZABLE"
    assert storage.logs == {}
    await persistence.append("s1", one_user_turn())
    assert seqs(storage.logs["s1"][1]) == [0, 1, 2]


async def test_a_backend_receives_the_logged_events_themselves(rig: Rig, storage: MemoryStorage) -> None:
    """(no snapshot, no encoding in the coordinator: append_batch gets the session's own immutable events)"""
    received: list[Sequence[SessionEvent]] = []

    class Recording(MemoryPersistence):
        async def append_batch(self, meta: SessionHeader, events: Sequence[SessionEvent], materialized: bool) -> None:
            received.append(events)
            await super().append_batch(meta, events, materialized)

    rig.kit.plugin = Recording
    await rig.mount()
    _fiber, session = await rig.live("s1")
    replay(session, one_user_turn())
    await rig.flush(session)
    [batch] = received
    assert all(sent is logged for sent, logged in zip(batch, session.events, strict=True))
