"""SessionStore (SPEC §3.4, tests of §3.7 describe "SessionStore"), on a real kernel."""

from __future__ import annotations

from typing import Any

import pytest

from dsh.core.errors import HarnessError
from dsh.core.llm import UNSET, to_json
from dsh.core.session import (
    SESSION_CREATED,
    SESSION_DISPOSED,
    SESSION_EVENT,
    SESSION_FLUSH,
    SESSIONS,
    Session,
    SessionEvent,
    SessionHeader,
    SessionMeta,
    SessionStore,
    UserMessageEvent,
    header_line,
)
from dsh.kernel import Context, EmitEvent, Fiber, KernelError, ParallelEvent, PluginSpec
from tests.core.session.conftest import PinnedClock
from tests.core.session.helpers import one_turn_log, text, user_message


async def _creator(root: Context, *args: Any, **kwargs: Any) -> tuple[Fiber, Session]:
    """Load a plugin that creates one session through its own context; return both."""
    made: list[Session] = []

    def apply(ctx: Context, _config: object) -> None:
        made.append(ctx[SESSIONS].create(*args, **kwargs))

    fiber = await root.plugin(PluginSpec(name="creator", apply=apply, inject=["sessions"]))
    return fiber, made[0]


# ------------------------------------------------------------- SPEC §3.7 titles
async def test_creates_sessions_emits_session_created_and_session_event(root: Context, store: SessionStore) -> None:
    """creates sessions, emits session/created and session/event"""
    created: list[Session] = []
    logged: list[tuple[Session, SessionEvent]] = []
    root.on(SESSION_CREATED, created.append)
    root.on(SESSION_EVENT, lambda session, event: logged.append((session, event)))
    session = store.create()
    assert session.id == "session-1"
    assert created == [session]
    assert store.get("session-1") is session
    assert store.list() == [session]
    appended = session.append("user/message", user_message("hi"))
    assert logged == [(session, appended)]
    second = store.create()
    assert second.id == "session-2"
    assert store.list() == [session, second]


async def test_rejects_duplicate_ids_and_supports_seeding(store: SessionStore) -> None:
    """rejects duplicate ids and supports seeding"""
    original = store.create("a")
    for entry in one_turn_log():
        original.append(type(entry), entry.data)  # type: ignore[union-attr]
    with pytest.raises(HarnessError, match='session "a" already exists') as caught:
        store.create("a")
    assert caught.value.code == "DUPLICATE_SESSION"
    fork = store.create("fork", seed=list(original.events))
    assert fork.derive_messages() == original.derive_messages()
    assert fork.seq == original.seq == 6
    assert store.list() == [original, fork]


async def test_synthesizes_a_minimal_v1_header_for_a_bare_created_session(
    store: SessionStore, pinned_clock: PinnedClock
) -> None:
    """synthesizes a minimal v1 header for a bare-created session"""
    session = store.create("bare")
    assert session.header == SessionHeader(version=1, id="bare", created_at=1_000)
    assert session.header.cwd is UNSET
    assert session.header.parent_session is UNSET
    assert header_line(session.header) == '{"type":"session","version":1,"id":"bare","createdAt":1000}'


async def test_attaches_cwd_and_parent_session_from_meta_to_the_header(store: SessionStore) -> None:
    """attaches cwd and parentSession from meta to the header"""
    meta = SessionMeta(parent_session="parent", cwd="/work/project", created_at=42)
    session = store.create("child", meta=meta)
    assert to_json(session.header) == {
        "version": 1,
        "id": "child",
        "createdAt": 42,
        "cwd": "/work/project",
        "parentSession": "parent",
    }
    assert list(to_json(session.header)) == ["version", "id", "createdAt", "cwd", "parentSession"]


async def test_rejects_a_non_absolute_meta_cwd(root: Context, store: SessionStore) -> None:
    """rejects a non-absolute meta.cwd"""
    created: list[Session] = []
    root.on(SESSION_CREATED, created.append)
    with pytest.raises(HarnessError, match='session cwd must be an absolute path, got "relative/dir"') as caught:
        store.create("s", meta=SessionMeta(cwd="relative/dir"))
    assert caught.value.code == "INVALID_CWD"
    assert store.get("s") is None
    assert store.list() == []
    assert created == []
    with pytest.raises(HarnessError, match="must be an absolute path"):
        store.create("s", meta=SessionMeta(cwd=""))
    assert store.create("s", meta=SessionMeta(cwd="/abs")).header.cwd == "/abs"


async def test_a_bare_session_constructed_without_the_store_still_exposes_a_v1_header(
    pinned_clock: PinnedClock,
) -> None:
    """a bare Session() constructed without the store still exposes a v1 header"""
    session = Session("lonely")
    assert session.header == SessionHeader(version=1, id="lonely", created_at=1_000)
    assert session.on_append is None


async def test_detaches_sessions_when_the_creating_fiber_is_disposed_hmr_safety(
    root: Context, store: SessionStore
) -> None:
    """detaches sessions when the creating fiber is disposed (HMR safety)"""
    logged: list[SessionEvent] = []
    root.on(SESSION_EVENT, lambda _session, event: logged.append(event))
    fiber, session = await _creator(root, "owned")
    session.append("user/message", user_message("before"))
    assert len(logged) == 1
    assert store.get("owned") is session
    await fiber.dispose()
    assert store.get("owned") is None
    assert store.list() == []
    assert session.on_append is None
    session.append("user/message", user_message("after"))
    assert len(logged) == 1
    assert session.seq == 2


async def test_rolls_back_the_session_and_on_append_when_a_session_created_listener_throws_p1_1(
    root: Context, store: SessionStore
) -> None:
    """rolls back the session (and onAppend) when a session/created listener throws (P1-1)"""
    seen: list[Session] = []

    def refuse(session: Session) -> None:
        seen.append(session)
        raise RuntimeError("listener refused")

    stop = root.on(SESSION_CREATED, refuse)
    with pytest.raises(RuntimeError, match="listener refused"):
        store.create("p1")
    assert store.get("p1") is None
    assert store.list() == []
    assert seen[0].on_append is None
    stop()
    again = store.create("p1")
    assert store.get("p1") is again
    assert again.on_append is not None


async def test_disposing_the_creator_emits_session_disposed_once_after_the_session_left_the_store(
    root: Context, store: SessionStore
) -> None:
    seen: list[tuple[Session, Session | None, object]] = []
    root.on(SESSION_DISPOSED, lambda session: seen.append((session, store.get(session.id), session.on_append)))
    fiber, session = await _creator(root, "owned")
    assert seen == []
    await fiber.dispose()
    assert seen == [(session, None, None)]  # out of the store and silenced when the listeners hear of it
    await fiber.dispose()
    assert len(seen) == 1


async def test_a_raising_session_disposed_listener_is_logged_and_the_teardown_goes_on(
    root: Context, store: SessionStore, caplog: pytest.LogCaptureFixture
) -> None:
    def refuse(session: Session) -> None:
        raise RuntimeError("listener refused")

    root.on(SESSION_DISPOSED, refuse)
    made: list[Session] = []

    def apply(ctx: Context, _config: object) -> None:
        made.extend([ctx[SESSIONS].create("first"), ctx[SESSIONS].create("second")])

    fiber = await root.plugin(PluginSpec(name="creator", apply=apply, inject=["sessions"]))
    await fiber.dispose()
    assert store.list() == []  # both detached although every listener call failed
    assert [session.on_append for session in made] == [None, None]
    failures = [record.getMessage() for record in caplog.records if "session/disposed listener" in record.getMessage()]
    assert len(failures) == 2
    assert 'session "first"' in " ".join(failures)
    assert "listener refused" in failures[0]


# ---------------------------------------------------- registry unload / rollback
async def test_unload_dispose_the_creating_plugin_and_find_nothing_left(root: Context, store: SessionStore) -> None:
    """Every session a plugin created goes with the plugin; the ids become reusable."""
    listeners_before = root.listener_count(SESSION_EVENT)
    fiber, first = await _creator(root, "one")
    made: list[Session] = []

    def more(ctx: Context, _config: object) -> None:
        made.append(ctx[SESSIONS].create())

    child = await fiber.ctx.plugin(PluginSpec(name="nested", apply=more, inject=["sessions"]))
    assert fiber.effect_count >= 2
    assert child.effect_count == 1
    assert {session.id for session in store.list()} == {"one", made[0].id}
    await fiber.dispose()
    assert store.list() == []
    assert first.on_append is None
    assert made[0].on_append is None
    assert fiber.effect_count == 0
    assert child.effect_count == 0
    assert root.listener_count(SESSION_EVENT) == listeners_before
    assert store.create("one").id == "one"


async def test_rollback_a_throwing_created_listener_leaves_nothing_and_the_id_is_reusable(
    root: Context, store: SessionStore
) -> None:
    """A throwing change listener leaves no session, no effect on the caller, and the name reusable."""

    def refuse(_session: Session) -> None:
        raise ValueError("no")

    stop = root.on(SESSION_CREATED, refuse)
    errors: list[BaseException] = []

    def apply(ctx: Context, _config: object) -> None:
        try:
            ctx[SESSIONS].create("p")
        except ValueError as error:
            errors.append(error)

    fiber = await root.plugin(PluginSpec(name="caller", apply=apply, inject=["sessions"]))
    assert len(errors) == 1
    assert fiber.effect_count == 0
    assert store.list() == []
    stop()
    fiber2, session = await _creator(root, "p")
    assert store.get("p") is session
    await fiber2.dispose()
    assert store.get("p") is None


async def test_the_store_goes_away_with_its_fiber(root: Context) -> None:
    fiber = await root.plugin(SessionStore)
    service = root.get(SESSIONS)
    assert isinstance(service, SessionStore)
    await fiber.dispose()
    assert root.get(SESSIONS) is None


# -------------------------------------------------------------- other behavior
async def test_a_session_is_owned_by_the_calling_plugin_not_the_store(root: Context) -> None:
    store_fiber = await root.plugin(SessionStore)
    fiber, session = await _creator(root, "mine")
    assert store_fiber.effect_count == 1  # only its service registration
    assert fiber.effect_count == 1
    await fiber.dispose()
    assert root[SESSIONS].get("mine") is None
    assert session.on_append is None


async def test_create_through_a_disposed_context_raises_and_registers_nothing(
    root: Context, store: SessionStore
) -> None:
    fiber, _session = await _creator(root, "first")
    stale = fiber.ctx[SESSIONS]
    await fiber.dispose()
    with pytest.raises(KernelError, match="cannot create effect on inactive context"):
        stale.create("late")
    assert store.get("late") is None


async def test_an_invalid_seed_registers_nothing(root: Context, store: SessionStore) -> None:
    created: list[Session] = []
    root.on(SESSION_CREATED, created.append)
    bad = one_turn_log()
    bad[1] = one_turn_log(start=6)[1]
    with pytest.raises(HarnessError, match="seed must be contiguous from 0"):
        store.create("seeded", seed=bad)
    assert store.list() == []
    assert created == []


async def test_seeded_events_are_not_emitted_and_session_created_sees_the_seed(
    root: Context, store: SessionStore
) -> None:
    logged: list[SessionEvent] = []
    seen_events: list[int] = []
    root.on(SESSION_EVENT, lambda _session, event: logged.append(event))
    root.on(SESSION_CREATED, lambda session: seen_events.append(session.seq))
    session = store.create("resumed", seed=one_turn_log())
    assert logged == []
    assert seen_events == [6]
    session.append("user/message", user_message("next"))
    assert [event.seq for event in logged] == [6]


async def test_a_throwing_session_event_listener_fails_the_append_after_the_push(
    root: Context, store: SessionStore
) -> None:
    def refuse(_session: Session, _event: SessionEvent) -> None:
        raise RuntimeError("persistence down")

    root.on(SESSION_EVENT, refuse)
    session = store.create("s")
    with pytest.raises(RuntimeError, match="persistence down"):
        session.append("user/message", user_message("x"))
    assert session.seq == 1
    logged = session.events[0]
    assert type(logged) is UserMessageEvent
    assert to_json(logged.data.content) == [text("x")]


async def test_default_ids_come_from_a_per_store_counter(store: SessionStore) -> None:
    store.create("session-2")
    assert store.create().id == "session-1"
    with pytest.raises(HarnessError, match='session "session-2" already exists'):
        store.create()
    assert store.create().id == "session-3"


async def test_meta_created_at_zero_is_kept(store: SessionStore) -> None:
    """``createdAt ?? now``: a falsy 0 is a value, not absence."""
    assert store.create("z", meta=SessionMeta(created_at=0)).header.created_at == 0


async def test_session_flush_is_an_awaited_parallel_event(root: Context, store: SessionStore) -> None:
    flushed: list[str] = []

    async def durable(session: Session) -> None:
        flushed.append(session.id)

    root.on(SESSION_FLUSH, durable)
    session = store.create("f")
    await root.parallel(SESSION_FLUSH, session)
    assert flushed == ["f"]


def test_event_descriptors_declare_name_mode_and_contract() -> None:
    assert isinstance(SESSION_CREATED, EmitEvent)
    assert isinstance(SESSION_EVENT, EmitEvent)
    assert isinstance(SESSION_FLUSH, ParallelEvent)
    assert isinstance(SESSION_DISPOSED, EmitEvent)
    assert [SESSION_CREATED.name, SESSION_EVENT.name, SESSION_FLUSH.name, SESSION_DISPOSED.name] == [
        "session/created",
        "session/event",
        "session/flush",
        "session/disposed",
    ]
    for descriptor in (SESSION_CREATED, SESSION_EVENT, SESSION_FLUSH, SESSION_DISPOSED):
        assert descriptor.doc.startswith("``(session")
    assert SESSIONS.name == "sessions"
