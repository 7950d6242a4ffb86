"""The shared contract suites every backend runs (SPEC §4.4 and §4.5).

Each case is a plain async function taking a started, unmounted :class:`Rig`; its
docstring is the reference test title. A backend's test module parametrizes over
:data:`PERSISTENCE_CONTRACT` and :data:`COORDINATOR_CONTRACT` with its own kit.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from dsh.core.llm import to_json
from dsh.core.persistence import PersistenceError
from dsh.core.session import SESSION_CREATED, SessionMeta, UntypedEvent, header_line
from tests.core.persistence.follow_contract import FOLLOW_CONTRACT
from tests.core.persistence.helpers import (
    CWD,
    RETIRED_OR_BOUND,
    Rig,
    assistant_message,
    event,
    log,
    meta,
    one_turn_log,
    one_user_turn,
    open_turn,
    replay,
    seqs,
    short_turn,
    step,
    text,
    texts,
    tool_call_block,
    turn_start,
    types,
    user_message,
)

Case = Callable[[Rig], Awaitable[None]]


def _not_json_values() -> list[Any]:
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    return [
        {1, 2},
        (1, 2),
        b"bytes",
        object(),
        lambda: None,
        math.nan,
        math.inf,
        -math.inf,
        {1: "non-string key"},
        cyclic,
        [1, [2, object()]],
    ]


# --- SPEC §4.4: SessionPersistence contract
async def round_trips_a_session_create_append_load_returns_identical_meta_and_byte_identical_events(
    rig: Rig,
) -> None:
    """round-trips a session: create + append → load returns identical meta and byte-identical events"""
    persistence = await rig.mount()
    header = meta("s1", CWD)
    events = one_turn_log()
    await persistence.create(header)
    await persistence.append("s1", events)
    loaded = await persistence.load("s1")
    assert loaded.meta == header
    assert header_line(loaded.meta) == header_line(header)
    assert texts(loaded.events) == texts(events)


async def crash_recovery_load_preserves_an_interrupted_unclosed_turn_and_closes_it_with_turn_end_interrupted(
    rig: Rig,
) -> None:
    """crash recovery: load preserves an interrupted (unclosed) turn and closes it with turn/end {interrupted}"""
    persistence = await rig.mount()
    await persistence.create(meta("s1"))
    written = [*one_turn_log(), *open_turn(2, 6)]
    await persistence.append("s1", written)
    loaded = await persistence.load("s1")
    assert texts(loaded.events[:8]) == texts(written)
    assert seqs(loaded.events) == list(range(10))
    assert types(loaded.events[8:]) == ["step/end", "turn/end"]
    assert to_json(loaded.events[8].data) == {"turn": 2, "step": 1}
    assert to_json(loaded.events[9].data) == {"turn": 2, "reason": {"kind": "interrupted"}}
    await persistence.append("s1", short_turn(3, 10))
    reloaded = await persistence.load("s1")
    assert seqs(reloaded.events) == list(range(12))
    assert types(reloaded.events[8:]) == ["step/end", "turn/end", "turn/start", "turn/end"]


async def crash_recovery_an_interrupted_tool_call_gets_a_synthetic_error_result_so_resume_is_a_valid_transcript(
    rig: Rig,
) -> None:
    """crash recovery: an interrupted tool call gets a synthetic error result so resume is a valid transcript"""
    persistence = await rig.mount()
    await persistence.create(meta("s1"))
    written = log(
        ("turn/start", turn_start(1)),
        ("user/message", user_message("run it")),
        ("step/start", step(1, 1)),
        ("assistant/message", assistant_message(1, 1, tool_call_block("call-x"))),
    )
    await persistence.append("s1", written)
    loaded = await persistence.load("s1")
    assert types(loaded.events) == [*types(written), "tool/result", "step/end", "turn/end"]
    result = to_json(loaded.events[4].data)
    assert result["callId"] == "call-x"
    assert result["isError"] is True
    assert result["error"]["code"] == "interrupted"
    assert to_json(loaded.events[6].data)["reason"] == {"kind": "interrupted"}


async def has_list_exclude_a_created_but_never_appended_zero_event_session(rig: Rig) -> None:
    """has()/list() exclude a created-but-never-appended (zero-event) session"""
    persistence = await rig.mount()
    await persistence.create(meta("lazy", CWD))
    assert await persistence.has("lazy") is False
    assert await persistence.list() == []


async def has_list_include_a_session_once_it_has_events(rig: Rig) -> None:
    """has()/list() include a session once it has events"""
    persistence = await rig.mount()
    header = meta("s1", CWD)
    await persistence.create(header)
    await persistence.append("s1", one_user_turn())
    assert await persistence.has("s1") is True
    assert await persistence.list() == [header]


async def append_rejects_a_batch_whose_first_seq_does_not_match_the_stored_next_seq(rig: Rig) -> None:
    """append rejects a batch whose first seq does not match the stored next-seq"""
    persistence = await rig.mount()
    await persistence.create(meta("s1"))
    await persistence.append("s1", one_user_turn())
    with pytest.raises(PersistenceError, match=r'append seq mismatch for "s1": expected 3 at index 0, got 5') as raised:
        await persistence.append("s1", short_turn(2, 5))
    assert raised.value.code == "SEQ_MISMATCH"
    assert seqs((await persistence.load("s1")).events) == [0, 1, 2]


async def append_rejects_a_mid_batch_seq_gap(rig: Rig) -> None:
    """append rejects a mid-batch seq gap"""
    persistence = await rig.mount()
    await persistence.create(meta("s1"))
    batch = [*short_turn(1, 0), *short_turn(2, 3)]
    with pytest.raises(PersistenceError, match=r"expected 2 at index 2, got 3"):
        await persistence.append("s1", batch)
    assert await persistence.has("s1") is False


async def append_rejects_non_json_serializable_event_data_naming_the_event_type(rig: Rig) -> None:
    """append rejects non-JSON-serializable event data, naming the event type"""
    persistence = await rig.mount()
    await persistence.create(meta("s1"))
    for value in _not_json_values():
        bad = UntypedEvent(type="plugin/note", seq=0, time=0, data={"content": [text("x")], "extra": value})
        with pytest.raises(PersistenceError, match=r'event "plugin/note" carries non-JSON-serializable data \(seq 0\)'):
            await persistence.append("s1", [bad])
    with pytest.raises(PersistenceError, match=r"cannot persist a dict: append session event values") as raised:
        await persistence.append("s1", [{"type": "user/message", "seq": 0, "time": 0, "data": user_message("x")}])  # type: ignore[list-item]
    assert raised.value.code == "NOT_SERIALIZABLE"
    assert await persistence.has("s1") is False


async def delete_removes_a_session(rig: Rig) -> None:
    """delete removes a session"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_user_turn())
    await persistence.delete("s1")
    assert await persistence.has("s1") is False
    assert await persistence.list() == []
    with pytest.raises(PersistenceError, match=r'session "s1" not found'):
        await persistence.load("s1")
    await persistence.create(meta("s1", CWD))


PERSISTENCE_CONTRACT: list[Case] = [
    round_trips_a_session_create_append_load_returns_identical_meta_and_byte_identical_events,
    crash_recovery_load_preserves_an_interrupted_unclosed_turn_and_closes_it_with_turn_end_interrupted,
    crash_recovery_an_interrupted_tool_call_gets_a_synthetic_error_result_so_resume_is_a_valid_transcript,
    has_list_exclude_a_created_but_never_appended_zero_event_session,
    has_list_include_a_session_once_it_has_events,
    append_rejects_a_batch_whose_first_seq_does_not_match_the_stored_next_seq,
    append_rejects_a_mid_batch_seq_gap,
    append_rejects_non_json_serializable_event_data_naming_the_event_type,
    delete_removes_a_session,
]


# --- SPEC §4.5: PersistenceCoordinator orchestration
async def persists_a_live_session_driven_through_the_store_surviving_reload(rig: Rig) -> None:
    """persists a live session driven through the store, surviving reload"""
    await rig.mount()
    _fiber, session = await rig.live("s1")
    replay(session, one_turn_log())
    await rig.flush(session)
    persistence = await rig.remount()
    loaded = await persistence.load("s1")
    assert texts(loaded.events) == texts(session.events)
    assert len(loaded.events) == 6
    assert loaded.meta.cwd == CWD
    assert loaded.meta == session.header


async def snapshot_on_buffer_mutating_an_event_after_session_event_does_not_corrupt_the_persisted_copy(
    rig: Rig,
) -> None:
    """snapshot-on-buffer: mutating an event after session/event does not corrupt the persisted copy"""
    await rig.mount()
    _fiber, session = await rig.live("s1")
    logged = session.append("user/message", user_message("original"))
    with pytest.raises(AttributeError):
        logged.data = None  # type: ignore[misc]  # an event is immutable: nothing can change it
    await rig.flush(session)
    loaded = await (await rig.remount()).load("s1")
    assert to_json(loaded.events[0].data)["content"][0]["text"] == "original"


async def append_snapshots_the_batch_mutating_the_caller_array_events_after_the_call_is_ignored(
    rig: Rig,
) -> None:
    """append snapshots the batch: mutating the caller array/events after the call is ignored"""
    persistence = await rig.mount()
    await persistence.create(meta("s1"))
    batch = one_turn_log()
    pending = persistence.append("s1", batch)
    batch[1] = event("user/message", 1, user_message("MUTATED"))
    batch[0] = event("turn/start", 99, turn_start(1))
    batch.append(event("user/message", 6, user_message("MUTATED")))
    await pending
    loaded = await persistence.load("s1")
    assert seqs(loaded.events) == [0, 1, 2, 3, 4, 5]
    assert to_json(loaded.events[1].data)["content"][0]["text"] == "hi"
    assert "MUTATED" not in "".join(texts(loaded.events))


async def fork_a_seeded_new_session_persists_its_seed_once_no_double_write_on_a_no_op_flush(rig: Rig) -> None:
    """fork: a seeded new session persists its seed once (no double-write on a no-op flush)"""
    await rig.mount()
    _fiber, fork = await rig.live("fork", seed=one_turn_log())
    await rig.init(fork)
    await rig.flush(fork)
    await rig.flush(fork)
    loaded = await (await rig.remount()).load("fork")
    assert seqs(loaded.events) == [0, 1, 2, 3, 4, 5]
    assert texts(loaded.events) == texts(one_turn_log())


async def resume_a_re_created_session_seeded_with_the_loaded_log_does_not_re_append_its_seed_and_continues_the_seq(
    rig: Rig,
) -> None:
    """resume: a re-created session seeded with the loaded log does not re-append its seed and continues the seq"""
    await rig.mount()
    first_fiber, first = await rig.live("s1")
    replay(first, one_turn_log())
    await rig.flush(first)
    await first_fiber.dispose()
    persistence = await rig.remount()
    loaded = await persistence.load("s1")
    _fiber, resumed = await rig.live("s1", seed=loaded.events)
    await rig.init(resumed)
    replay(resumed, short_turn(2, 6))
    await rig.flush(resumed)
    reloaded = await (await rig.remount()).load("s1")
    assert seqs(reloaded.events) == list(range(8))
    assert texts(reloaded.events[:6]) == texts(loaded.events)


async def hmr_applying_the_plugin_seeds_existing_live_sessions(rig: Rig) -> None:
    """HMR: applying the plugin seeds existing live sessions"""
    _fiber, session = await rig.live("early")
    replay(session, one_user_turn())
    await rig.mount()
    await rig.flush(session)
    loaded = await (await rig.remount()).load("early")
    assert texts(loaded.events) == texts(session.events)


async def hmr_dispose_drains_remaining_buffers(rig: Rig) -> None:
    """HMR: dispose drains remaining buffers"""
    await rig.mount()
    _fiber, session = await rig.live("s1")
    await rig.init(session)
    replay(session, one_user_turn())
    await rig.unmount()
    loaded = await (await rig.mount()).load("s1")
    assert texts(loaded.events) == texts(session.events)


async def hmr_reloading_the_backend_adopts_a_still_live_already_materialized_session(rig: Rig) -> None:
    """HMR: reloading the backend adopts a still-live, already-materialized session"""
    await rig.mount()
    _fiber, session = await rig.live("s1")
    replay(session, one_turn_log())
    await rig.flush(session)
    await rig.remount()
    await rig.init(session)
    replay(session, one_turn_log(turn=2))
    await rig.flush(session)
    loaded = await (await rig.remount()).load("s1")
    assert seqs(loaded.events) == list(range(12))
    assert texts(loaded.events) == texts(session.events)


async def hmr_adoption_persists_the_live_suffix_that_was_ahead_of_the_stored_prefix(rig: Rig) -> None:
    """HMR: adoption persists the live SUFFIX that was ahead of the stored prefix"""
    await rig.mount()
    _fiber, session = await rig.live("s1")
    replay(session, short_turn(1, 0))
    await rig.flush(session)
    await rig.unmount()
    replay(session, short_turn(2, 2))
    await rig.mount()
    await rig.init(session)
    loaded = await (await rig.remount()).load("s1")
    assert seqs(loaded.events) == [0, 1, 2, 3]
    assert texts(loaded.events) == texts(session.events)


async def hmr_adoption_does_not_crash_repair_an_active_open_turn_as_interrupted_truncate_without_closers(
    rig: Rig,
) -> None:
    """HMR adoption does NOT crash-repair an active open turn as interrupted (truncate without closers)"""
    await rig.mount()
    _fiber, session = await rig.live("s1")
    replay(session, open_turn(1, 0))
    await rig.flush(session)
    await rig.unmount()
    if rig.kit.corrupt_tail is not None:
        rig.kit.corrupt_tail("s1", CWD)
    await rig.mount()
    await rig.init(session)
    session.append("step/end", step(1, 1))
    session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    await rig.flush(session)
    loaded = await (await rig.remount()).load("s1")
    assert types(loaded.events) == ["turn/start", "step/start", "step/end", "turn/end"]
    assert to_json(loaded.events[3].data)["reason"] == {"kind": "completed"}


async def a_new_live_session_colliding_on_a_persisted_id_is_rejected_not_silently_adopted(rig: Rig) -> None:
    """a NEW live session colliding on a persisted id is rejected, not silently adopted"""
    persistence = await rig.mount()
    await persistence.create(meta("taken", CWD))
    await persistence.append("taken", one_turn_log())
    await rig.remount()
    _fiber, intruder = await rig.live("taken")
    intruder.append("user/message", user_message("a different conversation"))
    with pytest.raises(PersistenceError, match=r"already has a persisted log|id collision") as raised:
        await rig.init(intruder)
    assert raised.value.code == "ID_COLLISION"
    with pytest.raises(PersistenceError, match=r"id collision"):
        await rig.flush(intruder)
    loaded = await (await rig.remount()).load("taken")
    assert texts(loaded.events) == texts(one_turn_log())


async def an_abandoned_lazy_session_never_materialized_releases_its_id_for_reuse(rig: Rig) -> None:
    """an abandoned lazy session (never materialized) releases its id for reuse"""
    await rig.mount()
    first_fiber, first = await rig.live("s1")
    await rig.init(first)
    await first_fiber.dispose()
    _fiber, second = await rig.live("s1")
    await rig.init(second)
    replay(second, one_user_turn())
    await rig.flush(second)
    loaded = await (await rig.remount()).load("s1")
    assert texts(loaded.events) == texts(second.events)


async def does_not_reclaim_an_id_whose_abandoned_owner_still_has_buffered_unflushed_events(rig: Rig) -> None:
    """does NOT reclaim an id whose abandoned owner still has buffered (unflushed) events"""
    await rig.mount()
    first_fiber, first = await rig.live("s1")
    await rig.init(first)
    replay(first, one_user_turn())
    await first_fiber.dispose()  # retired (session/disposed): its buffer is appended, then it is forgotten
    _fiber, second = await rig.live("s1")
    with pytest.raises(PersistenceError, match=RETIRED_OR_BOUND) as raised:
        await rig.init(second)
    assert raised.value.code == "ID_COLLISION"
    loaded = await (await rig.remount()).load("s1")
    assert texts(loaded.events) == texts(first.events)


async def init_for_is_idempotent_re_emitting_session_created_does_not_re_initialize(rig: Rig) -> None:
    """initFor is idempotent: re-emitting session/created does not re-initialize"""
    await rig.mount()
    _fiber, session = await rig.live("s1")
    init = rig.backend.inits[session]
    replay(session, short_turn(1, 0))
    await rig.flush(session)
    rig.ctx.emit(SESSION_CREATED, session)
    assert rig.backend.inits[session] is init
    assert rig.backend.coordinator.init_for(session) is init
    await rig.flush(session)
    loaded = await (await rig.remount()).load("s1")
    assert seqs(loaded.events) == [0, 1]


async def a_live_session_claims_cursor_0_ownerless_state_created_via_the_public_api_and_persists_its_seed(
    rig: Rig,
) -> None:
    """a live session claims cursor-0 ownerless state created via the public API and persists its seed"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    _fiber, session = await rig.live("s1", seed=one_turn_log())
    await rig.init(session)
    assert await persistence.has("s1") is True
    session.append("user/message", user_message("more"))
    await rig.flush(session)
    loaded = await (await rig.remount()).load("s1")
    assert seqs(loaded.events) == list(range(7))
    assert texts(loaded.events[:6]) == texts(one_turn_log())


async def a_fresh_session_reusing_a_previously_loaded_id_is_rejected_ownerless_guard(rig: Rig) -> None:
    """a fresh session reusing a previously-loaded id is rejected (ownerless guard)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_turn_log())
    await persistence.load("s1")
    _fiber, fresh = await rig.live("s1")
    with pytest.raises(PersistenceError, match=r"already persisted with 6 event\(s\) that do not match") as raised:
        await rig.init(fresh)
    assert raised.value.code == "ID_COLLISION"


async def a_live_session_whose_seed_matches_the_loaded_prefix_claims_ownerless_state_and_persists_the_suffix(
    rig: Rig,
) -> None:
    """a live session whose seed matches the loaded prefix claims ownerless state and persists the suffix"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_turn_log())
    loaded = await persistence.load("s1")
    _fiber, session = await rig.live("s1", seed=[*loaded.events, *short_turn(2, 6)])
    await rig.init(session)
    reloaded = await (await rig.remount()).load("s1")
    assert seqs(reloaded.events) == list(range(8))
    assert texts(reloaded.events) == texts(session.events)


async def append_adopts_a_storage_only_session_fresh_instance_and_continues_the_seq(rig: Rig) -> None:
    """append adopts a storage-only session (fresh instance) and continues the seq"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_turn_log())
    fresh = await rig.remount()
    await fresh.append("s1", short_turn(2, 6))
    loaded = await (await rig.remount()).load("s1")
    assert seqs(loaded.events) == list(range(8))


async def append_of_an_empty_batch_is_a_no_op_stays_lazy(rig: Rig) -> None:
    """append of an empty batch is a no-op (stays lazy)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", [])
    assert await persistence.has("s1") is False
    assert await persistence.list() == []
    await persistence.append("s1", one_user_turn())
    assert await persistence.has("s1") is True


async def load_rejects_a_missing_session(rig: Rig) -> None:
    """load rejects a missing session"""
    persistence = await rig.mount()
    with pytest.raises(PersistenceError, match=r'session "ghost" not found') as raised:
        await persistence.load("ghost")
    assert raised.value.code == "SESSION_NOT_FOUND"


async def delete_of_a_non_existent_session_is_a_no_op(rig: Rig) -> None:
    """delete of a non-existent session is a no-op"""
    persistence = await rig.mount()
    await persistence.delete("ghost")
    assert await persistence.has("ghost") is False
    assert await persistence.list() == []


async def create_rejects_a_duplicate_id_in_memory_and_on_a_persisted_log(rig: Rig) -> None:
    """create rejects a duplicate id (in memory and on a persisted log)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    with pytest.raises(PersistenceError, match=r'session "s1" already exists in this backend') as raised:
        await persistence.create(meta("s1", CWD))
    assert raised.value.code == "SESSION_EXISTS"
    await persistence.append("s1", one_user_turn())
    fresh = await rig.remount()
    with pytest.raises(PersistenceError, match=r'session "s1" already has a persisted log on disk'):
        await fresh.create(meta("s1", CWD))


async def rejects_an_unknown_format_version_on_load_assert_version(rig: Rig) -> None:
    """rejects an unknown format version on load (assertVersion)"""
    persistence = await rig.mount()
    await persistence.create(meta("v2", CWD, version=2))
    await persistence.append("v2", one_user_turn())
    with pytest.raises(
        PersistenceError, match=r'unsupported session format version 2 for "v2" \(only v1 is supported\)'
    ) as raised:
        await (await rig.remount()).load("v2")
    assert raised.value.code == "UNSUPPORTED_VERSION"


async def round_trips_a_header_with_parent_session_fork_lineage(rig: Rig) -> None:
    """round-trips a header with parentSession (fork lineage)"""
    persistence = await rig.mount()
    header = meta("child", CWD, parentSession="parent")
    await persistence.create(header)
    await persistence.append("child", one_user_turn())
    fresh = await rig.remount()
    loaded = await fresh.load("child")
    assert loaded.meta == header
    assert loaded.meta.parent_session == "parent"
    assert await fresh.list() == [header]


async def flush_before_init_resolves_uses_cursor_0(rig: Rig) -> None:
    """flush before init resolves uses cursor 0"""
    await rig.mount()
    session = rig.store.create("s1", meta=SessionMeta(cwd=CWD))
    init = rig.backend.inits[session]
    replay(session, one_user_turn())
    flushing = rig.backend.coordinator.flush(session)
    assert not init.done()
    await flushing
    assert init.done()
    loaded = await (await rig.remount()).load("s1")
    assert seqs(loaded.events) == [0, 1, 2]


async def torn_tail_load_a_never_committed_tail_is_truncated_and_the_open_turn_closed_during_load(
    rig: Rig,
) -> None:
    """torn-tail load: a never-committed tail is truncated and the open turn closed during load (commitRepair w/ tornMarker)"""
    if rig.kit.corrupt_tail is None:
        assert rig.kit.name == "memory"
        pytest.skip("the memory backend never stores a torn tail")
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    written = [*one_turn_log(), *open_turn(2, 6)]
    await persistence.append("s1", written)
    await rig.unmount()
    rig.kit.corrupt_tail("s1", CWD)
    fresh = await rig.mount()
    loaded = await fresh.load("s1")
    assert seqs(loaded.events) == list(range(10))
    assert texts(loaded.events[:8]) == texts(written)
    assert to_json(loaded.events[9].data)["reason"] == {"kind": "interrupted"}
    await fresh.append("s1", short_turn(3, 10))
    reloaded = await (await rig.remount()).load("s1")
    assert seqs(reloaded.events) == list(range(12))
    assert texts(reloaded.events[:10]) == texts(loaded.events)


COORDINATOR_CONTRACT: list[Case] = [
    persists_a_live_session_driven_through_the_store_surviving_reload,
    snapshot_on_buffer_mutating_an_event_after_session_event_does_not_corrupt_the_persisted_copy,
    append_snapshots_the_batch_mutating_the_caller_array_events_after_the_call_is_ignored,
    fork_a_seeded_new_session_persists_its_seed_once_no_double_write_on_a_no_op_flush,
    resume_a_re_created_session_seeded_with_the_loaded_log_does_not_re_append_its_seed_and_continues_the_seq,
    hmr_applying_the_plugin_seeds_existing_live_sessions,
    hmr_dispose_drains_remaining_buffers,
    hmr_reloading_the_backend_adopts_a_still_live_already_materialized_session,
    hmr_adoption_persists_the_live_suffix_that_was_ahead_of_the_stored_prefix,
    hmr_adoption_does_not_crash_repair_an_active_open_turn_as_interrupted_truncate_without_closers,
    a_new_live_session_colliding_on_a_persisted_id_is_rejected_not_silently_adopted,
    an_abandoned_lazy_session_never_materialized_releases_its_id_for_reuse,
    does_not_reclaim_an_id_whose_abandoned_owner_still_has_buffered_unflushed_events,
    init_for_is_idempotent_re_emitting_session_created_does_not_re_initialize,
    a_live_session_claims_cursor_0_ownerless_state_created_via_the_public_api_and_persists_its_seed,
    a_fresh_session_reusing_a_previously_loaded_id_is_rejected_ownerless_guard,
    a_live_session_whose_seed_matches_the_loaded_prefix_claims_ownerless_state_and_persists_the_suffix,
    append_adopts_a_storage_only_session_fresh_instance_and_continues_the_seq,
    append_of_an_empty_batch_is_a_no_op_stays_lazy,
    load_rejects_a_missing_session,
    delete_of_a_non_existent_session_is_a_no_op,
    create_rejects_a_duplicate_id_in_memory_and_on_a_persisted_log,
    rejects_an_unknown_format_version_on_load_assert_version,
    round_trips_a_header_with_parent_session_fork_lineage,
    flush_before_init_resolves_uses_cursor_0,
    torn_tail_load_a_never_committed_tail_is_truncated_and_the_open_turn_closed_during_load,
    *FOLLOW_CONTRACT,
]


def case_id(case: Case) -> str:
    return case.__name__
