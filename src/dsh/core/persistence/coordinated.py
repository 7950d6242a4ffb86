"""CoordinatedPersistence: a SessionPersistence built from its own storage hooks."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Mapping, Sequence

from dsh.core.persistence.backend import PersistenceBackend
from dsh.core.persistence.coordinator import PersistenceCoordinator
from dsh.core.persistence.follow import poll_log
from dsh.core.persistence.service import LoadedSession, SessionPersistence
from dsh.core.session import Session, SessionEvent, SessionHeader
from dsh.kernel import Context


class CoordinatedPersistence(SessionPersistence, PersistenceBackend):
    """Base of a backend plugin: implement the storage hooks, get the whole service.

    The constructor registers the service under ``session_persistence`` and builds the
    :class:`PersistenceCoordinator` over ``self``, so the write-path listeners and the
    dispose drain belong to the backend's fiber. A subclass prepares its storage
    *before* calling ``super().__init__(ctx)``: live sessions are adopted at once.
    ``list()`` is the backend hook itself.
    """

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self.coordinator = PersistenceCoordinator(ctx, self)

    @property
    def inits(self) -> Mapping[Session, Awaitable[None]]:
        """The coordinator's adoption tasks, by live Session object (read-only)."""
        return self.coordinator.inits

    def create(self, meta: SessionHeader) -> Awaitable[None]:
        return self.coordinator.create(meta)

    def append(self, id: str, events: Sequence[SessionEvent]) -> Awaitable[None]:
        return self.coordinator.append(id, events)

    def load(self, id: str) -> Awaitable[LoadedSession]:
        return self.coordinator.load(id)

    def has(self, id: str) -> Awaitable[bool]:
        return self.coordinator.has(id)

    def delete(self, id: str) -> Awaitable[None]:
        return self.coordinator.delete(id)

    def follow(self, id: str, after_seq: int = -1) -> AsyncGenerator[SessionEvent, None]:
        """Poll the storage hooks (:func:`~dsh.core.persistence.follow.poll_log`); see ``SessionPersistence.follow``."""
        return poll_log(self, id, after_seq)
