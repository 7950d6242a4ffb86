"""The follow seam's own rules: a read is cut to what continues the last event; the base service refuses."""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Sequence

import pytest

from dsh.core.persistence import LoadedSession, PersistenceError, SessionPersistence, continuing
from dsh.core.session import SessionEvent, SessionHeader
from dsh.kernel import Context
from tests.core.persistence.helpers import one_user_turn, seqs, short_turn


def test_a_read_is_cut_to_the_events_continuing_the_last_one() -> None:
    events = [*one_user_turn(1, 0), *short_turn(2, 3)]
    assert seqs(continuing(events, 1)) == [2, 3, 4]
    assert seqs(continuing(events, -1)) == [0, 1, 2, 3, 4]
    assert seqs(continuing([*events[:2], *events[3:]], -1)) == [0, 1]
    assert continuing(events, 4) == []


class _Bare(SessionPersistence):
    """A service that implements only the abstract methods (no storage hooks)."""

    def __init__(self, ctx: Context, config: object = None) -> None:
        super().__init__(ctx)

    def create(self, meta: SessionHeader) -> Awaitable[None]:
        raise NotImplementedError

    def append(self, id: str, events: Sequence[SessionEvent]) -> Awaitable[None]:
        raise NotImplementedError

    def load(self, id: str) -> Awaitable[LoadedSession]:
        raise NotImplementedError

    async def list(self) -> builtins.list[SessionHeader]:
        raise NotImplementedError

    def has(self, id: str) -> Awaitable[bool]:
        raise NotImplementedError

    def delete(self, id: str) -> Awaitable[None]:
        raise NotImplementedError


async def test_a_service_without_storage_hooks_refuses_to_follow() -> None:
    root = Context()
    try:
        fiber = await root.plugin(_Bare)
        service: SessionPersistence = fiber.instance
        with pytest.raises(PersistenceError, match="_Bare cannot follow a session") as caught:
            service.follow("s")
        assert caught.value.code == "UNSUPPORTED"
    finally:
        await root.dispose()
