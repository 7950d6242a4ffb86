"""The ``session_persistence`` service: what a durable session backend does (SPEC §4.1).

Concrete backends are plugins (``inject = ["sessions"]``) that register under
:data:`SESSION_PERSISTENCE`; most derive from :class:`CoordinatedPersistence`, which
implements this API with the shared
:class:`~dsh.core.persistence.coordinator.PersistenceCoordinator` over the storage
hooks of :class:`~dsh.core.persistence.backend.PersistenceBackend`.
"""

from __future__ import annotations

import builtins
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass

from dsh.core.session import SessionEvent, SessionHeader
from dsh.kernel import Context, Service, ServiceKey


@dataclass
class LoadedSession:
    """A stored session read back: its header and its full, contiguous log.

    The header and events are immutable values (seed a live session with them:
    ``Session(id, seed=loaded.events, header=loaded.meta)``); the list is the caller's.
    """

    meta: SessionHeader
    events: list[SessionEvent]


class SessionPersistence(Service, ABC):
    """Durable storage of session logs, registered as ``ctx[SESSION_PERSISTENCE]``.

    Every method returns an awaitable. Operations on one id run one after another in
    call order; a failed operation never blocks the next one.
    """

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx, SESSION_PERSISTENCE)

    @abstractmethod
    def create(self, meta: SessionHeader) -> Awaitable[None]:
        """Register a new session. May write nothing until the first non-empty append.

        Rejects an id this backend already tracks or already has stored anywhere.
        """

    @abstractmethod
    def append(self, id: str, events: Sequence[SessionEvent]) -> Awaitable[None]:
        """Durably append a contiguous batch; resolves only once it is durable.

        The first event's ``seq`` must equal the stored next seq. Items that are not
        event values, and untyped events with non-JSON data, are rejected naming the
        event. The list is read at call time, so later changes to it are ignored.
        """

    @abstractmethod
    def load(self, id: str) -> Awaitable[LoadedSession]:
        """Return the header and full log of ``id``.

        A final turn a crash left open is kept and closed durably with synthetic
        closers; a torn tail is dropped. Rejects an unknown id, an unsupported format
        version, and damage in the committed region.
        """

    @abstractmethod
    async def list(self) -> builtins.list[SessionHeader]:
        """The headers of every stored session (never-materialized ones excluded)."""

    @abstractmethod
    def has(self, id: str) -> Awaitable[bool]:
        """True when ``id`` is durably stored (materialized)."""

    @abstractmethod
    def delete(self, id: str) -> Awaitable[None]:
        """Remove what is stored for ``id``; a no-op for an unknown id."""


SESSION_PERSISTENCE: ServiceKey[SessionPersistence] = ServiceKey("session_persistence")
