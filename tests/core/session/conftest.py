"""Fixtures for the session tests: a pinned clock and a kernel tree with the store."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from dsh.core.session import SESSIONS, SessionStore, clock
from dsh.kernel import Context


class PinnedClock:
    """A fake clock: ``now`` is returned until moved; ``tick`` advances it."""

    def __init__(self, now: int) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now

    def tick(self, by: int = 1) -> int:
        self.now += by
        return self.now


@pytest.fixture
def pinned_clock(monkeypatch: pytest.MonkeyPatch) -> PinnedClock:
    fake = PinnedClock(1_000)
    monkeypatch.setattr(clock, "now_ms", fake)
    return fake


@pytest.fixture
async def root() -> AsyncIterator[Context]:
    ctx = Context()
    yield ctx
    await ctx.dispose()


@pytest.fixture
async def store(root: Context) -> SessionStore:
    """The store loaded into ``root`` and seen through the root context."""
    await root.plugin(SessionStore)
    return root[SESSIONS]
