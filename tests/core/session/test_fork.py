"""Forking a session: the cut after a completed turn (fork_point) and SessionStore.fork."""

from __future__ import annotations

import pytest

from dsh.core.errors import HarnessError
from dsh.core.llm import UNSET
from dsh.core.session import (
    SESSION_CREATED,
    Session,
    SessionMeta,
    SessionStore,
    TurnEndEvent,
    fork_point,
    fork_prefix,
)
from dsh.kernel import Context
from tests.core.session.conftest import PinnedClock
from tests.core.session.helpers import log, one_turn_log, step, turn_start, user_message


def _two_turns_and_an_open_third() -> list:  # type: ignore[type-arg]
    events = [*one_turn_log(1), *one_turn_log(2, start=6)]
    return [*events, *log(("turn/start", turn_start(3)), ("user/message", user_message("more")), start=12)]


def test_the_default_fork_point_is_the_end_of_the_last_completed_turn() -> None:
    events = _two_turns_and_an_open_third()
    assert fork_point(events) == 12
    prefix = fork_prefix(events)
    assert [event.seq for event in prefix] == list(range(12))
    assert type(prefix[-1]) is TurnEndEvent
    assert prefix[0] is events[0]  # the logged values themselves


def test_a_named_completed_turn_cuts_right_after_its_turn_end() -> None:
    events = _two_turns_and_an_open_third()
    assert fork_point(events, 1) == 6
    assert fork_prefix(events, 2) == events[:12]


def test_an_open_turn_is_refused_naming_the_completed_ones() -> None:
    with pytest.raises(HarnessError, match=r"turn 3 is not completed.*completed turns: 1, 2") as raised:
        fork_point(_two_turns_and_an_open_third(), 3)
    assert raised.value.code == "INVALID_FORK"


def test_a_turn_that_does_not_exist_is_refused() -> None:
    with pytest.raises(HarnessError, match=r"has no turn 9 to fork at \(completed turns: 1, 2\)") as raised:
        fork_point(_two_turns_and_an_open_third(), 9)
    assert raised.value.code == "INVALID_FORK"


def test_a_log_without_a_completed_turn_cannot_be_forked() -> None:
    open_only = log(("turn/start", turn_start(1)), ("step/start", step(1, 1)))
    with pytest.raises(HarnessError, match="no completed turn to fork at") as raised:
        fork_point(open_only)
    assert raised.value.code == "INVALID_FORK"
    with pytest.raises(HarnessError, match=r"turn 1 is not completed.*\(no turn is completed yet\)"):
        fork_point(open_only, 1)
    with pytest.raises(HarnessError, match="no completed turn"):
        fork_point([])


async def test_store_fork_seeds_a_live_session_with_the_lineage(
    root: Context, store: SessionStore, pinned_clock: PinnedClock
) -> None:
    source = store.create("src", seed=_two_turns_and_an_open_third(), meta=SessionMeta(cwd="/w"))
    created: list[Session] = []
    root.on(SESSION_CREATED, created.append)
    child = store.fork(source, 1, id="child")
    assert created == [child]
    assert store.get("child") is child
    assert list(child.events) == list(source.events[:6])
    header = child.header
    assert (header.parent_session, header.seed_length, header.cwd, header.created_at) == ("src", 6, "/w", 1_000)
    assert child.derive_messages() == Session("x", seed=source.events[:6]).derive_messages()


async def test_store_fork_by_id_defaults_to_the_last_turn_and_a_generated_id(store: SessionStore) -> None:
    store.create("src", seed=one_turn_log(1))
    child = store.fork("src")
    assert child.id.startswith("session-")
    assert child.header.seed_length == 6
    assert child.header.cwd is UNSET
    assert child.seq == 6


async def test_store_fork_of_an_unknown_id_or_an_open_turn_creates_nothing(store: SessionStore) -> None:
    with pytest.raises(HarnessError, match='no live session "nope" to fork') as raised:
        store.fork("nope")
    assert raised.value.code == "SESSION_NOT_FOUND"
    store.create("src", seed=_two_turns_and_an_open_third())
    with pytest.raises(HarnessError, match="turn 3 is not completed"):
        store.fork("src", 3, id="child")
    assert store.get("child") is None
