"""The ``session_persistence`` service: what a durable session backend does (SPEC §4.1).

Concrete backends are plugins (``inject = ["sessions"]``) that register under
:data:`SESSION_PERSISTENCE`; most derive from :class:`CoordinatedPersistence`, which
implements this API with the shared
:class:`~dsh.core.persistence.coordinator.PersistenceCoordinator` over the storage
hooks of :class:`~dsh.core.persistence.backend.PersistenceBackend`.
"""

from __future__ import annotations

import builtins
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Awaitable, Sequence
from dataclasses import dataclass

from dsh.core.persistence.errors import PersistenceError
from dsh.core.session import SESSION_FORMAT_VERSION, SESSIONS, SessionEvent, SessionHeader, clock, fork_prefix
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

    def follow(self, id: str, after_seq: int = -1) -> AsyncGenerator[SessionEvent, None]:
        """The events of ``id`` with seq above ``after_seq``, each as soon as it is stored, until deleted.

        Reads only: it claims no writer lock and repairs nothing, so it may follow a
        session another process is writing. The events come in seq order, without gap
        or duplicate, and only once stored where another process reads them (a torn
        tail never); the iterator ends when the session is deleted, otherwise it runs
        until the caller stops it (``aclose()`` or cancelling the task). Raises
        ``SESSION_NOT_FOUND`` when nothing is stored for ``id``. The default refuses
        (``UNSUPPORTED``); :class:`~dsh.core.persistence.CoordinatedPersistence` polls
        (:func:`~dsh.core.persistence.follow.poll_log`) and the PostgreSQL backend waits
        for ``NOTIFY``.
        """
        raise PersistenceError(f"{type(self).__name__} cannot follow a session", "UNSUPPORTED")

    async def fork(self, source_id: str, at_turn: int | None = None, *, id: str | None = None) -> LoadedSession:
        """Store a new session whose log is ``source_id``'s up to the end of turn ``at_turn``; return it.

        ``at_turn`` defaults to the source's last completed turn; a turn that does not
        exist or never ended is refused with ``INVALID_FORK``
        (:func:`~dsh.core.session.fork_point`), and nothing is stored then. The source
        is the live session of that id in this tree's ``sessions`` store when there is
        one (its newest events), else it is loaded (:meth:`load`, which repairs a crash
        tail and claims the writer lock). The new session (id ``id``, default a random
        UUID) keeps the source's ``cwd``; its header carries the lineage,
        ``parent_session`` and ``seed_length`` (the events copied, ``seq`` contiguous
        from 0), and it is durable when this returns. Resume it to continue the
        conversation from the fork point.
        """
        sessions = self.ctx.get(SESSIONS)
        live = sessions.get(source_id) if sessions is not None else None
        if live is not None:
            source_meta, events = live.header, list(live.events)
        else:
            loaded = await self.load(source_id)
            source_meta, events = loaded.meta, loaded.events
        prefix = fork_prefix(events, at_turn)
        meta = SessionHeader(
            version=SESSION_FORMAT_VERSION,
            id=id if id is not None else str(uuid.uuid4()),
            created_at=clock.now_ms(),
            cwd=source_meta.cwd,
            parent_session=source_id,
            seed_length=len(prefix),
        )
        await self.create(meta)
        await self.append(meta.id, prefix)
        return LoadedSession(meta, prefix)


SESSION_PERSISTENCE: ServiceKey[SessionPersistence] = ServiceKey("session_persistence")
