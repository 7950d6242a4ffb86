"""The storage hooks a durable backend supplies to the coordinator (SPEC §4.2).

A backend stores one log per session id: a header and the contiguous events
``seq 0..n-1``. It knows nothing about live sessions, buffers or ordering; the
:class:`~dsh.core.persistence.coordinator.PersistenceCoordinator` calls these hooks
one at a time per id, so a hook never races another hook for the same id.
"""

from __future__ import annotations

import builtins
import enum
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from dsh.core.session import SessionEvent, SessionHeader


class _Missing(enum.Enum):
    MISSING = "MISSING"

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing.MISSING
"""The absent torn marker. Test it with ``is``: a present marker may be falsy (``0``)."""


@dataclass
class StoredPrefix:
    """What a backend read back: the header, the preserved events, and a torn marker.

    ``events`` is the longest valid prefix (``events[i].seq == i``). ``torn_marker``
    is :data:`MISSING` unless storage holds damage past that prefix that
    :meth:`PersistenceBackend.commit_repair` must cut away; its value is opaque to the
    coordinator (a byte offset for JSONL, a seq for SQLite) and only handed back.
    """

    meta: SessionHeader
    events: list[SessionEvent]
    torn_marker: object = field(default=MISSING)


class PersistenceBackend(ABC):
    """Storage hooks over one storage medium (files, a database, a dict).

    Every hook but :meth:`write_batch_now` is async, and any may raise; the coordinator
    passes failures to whoever called the service. Headers and events are immutable
    values, shared with the live session and the caller: a hook may keep them; it
    encodes them itself (once, as it writes them). ``name`` labels the backend in
    diagnostics.
    """

    name: str

    @abstractmethod
    async def load_stored(self, id: str) -> StoredPrefix | None:
        """The stored prefix of ``id`` in any storage scope, or None when nothing is stored."""

    @abstractmethod
    async def load_live(self, id: str, cwd: str | None) -> StoredPrefix | None:
        """The stored prefix of ``id`` in exactly the scope of ``cwd``.

        ``cwd=None`` is the definite no-cwd scope, not "any scope". A backend without
        scopes answers like :meth:`load_stored`.
        """

    @abstractmethod
    async def append_batch(self, meta: SessionHeader, events: Sequence[SessionEvent], materialized: bool) -> None:
        """Durably append ``events`` (contiguous, continuing the stored log).

        When ``materialized`` is False nothing is stored for ``meta.id`` yet: create
        the artifact with the header and this first batch together, refusing to replace
        an artifact that appeared meanwhile. Returns only once the batch is durable; on
        failure nothing of the batch may remain stored.
        """

    async def write_batch(self, meta: SessionHeader, events: Sequence[SessionEvent], materialized: bool) -> None:
        """Append ``events`` like :meth:`append_batch`, written but not necessarily synced.

        The batch must survive the death of this process (it is in storage, where a
        reader sees it), though perhaps not a crash of the machine until a later
        :meth:`append_batch` or :meth:`sync_log` of the same id, which makes it durable
        too. On failure nothing of the batch may remain stored. The default appends
        durably; a backend whose sync is costly writes without it.
        """
        await self.append_batch(meta, events, materialized)

    def write_batch_now(self, meta: SessionHeader, events: Sequence[SessionEvent]) -> bool:
        """Write ``events`` like :meth:`write_batch` does, at once, on the event loop; or decline.

        Called only for a log that is stored already (materialized), with no other hook
        of ``meta.id`` in flight, and ``events`` contiguous, continuing it. Returns True
        once the batch is written as :meth:`write_batch` writes it; False to decline,
        having written nothing: the coordinator then awaits :meth:`write_batch`. Meant
        for a write that costs less than a hop to a worker thread (one ``write`` into
        the OS's cache); it must never wait on the disk. On failure it raises with
        nothing of the batch stored. The default declines.
        """
        return False

    async def sync_log(self, meta: SessionHeader) -> None:  # noqa: B027 - optional hook with a no-op default
        """Make every :meth:`write_batch` of ``meta.id`` durable.

        The default is a no-op, matching the default :meth:`write_batch`, which is
        durable already.
        """

    @abstractmethod
    async def commit_repair(self, meta: SessionHeader, torn_marker: object, closers: Sequence[SessionEvent]) -> None:
        """Cut storage back to ``torn_marker`` (unless it is :data:`MISSING`), then append ``closers``.

        Need not be atomic: a crash between the two steps leaves a log that the next
        load repairs again.
        """

    @abstractmethod
    async def delete_stored(self, id: str) -> None:
        """Remove everything stored for ``id``; a no-op when nothing is."""

    @abstractmethod
    async def list(self) -> builtins.list[SessionHeader]:
        """The headers of every stored (materialized) session, without reading whole logs."""

    async def read_after(self, id: str, after_seq: int) -> builtins.list[SessionEvent] | None:
        """The stored events of ``id`` whose seq is above ``after_seq``, in seq order; None when nothing is stored.

        Reads only: claims no writer lock and repairs nothing (a torn tail is left out,
        as :meth:`load_stored` leaves it out). The default reads the whole log with
        :meth:`load_stored`; a backend that can read from a seq on overrides it.
        """
        stored = await self.load_stored(id)
        return None if stored is None else stored.events[after_seq + 1 :]

    async def change_mark(self, id: str) -> object:
        """A cheap token that differs whenever the stored log of ``id`` may have changed.

        Followers (:func:`~dsh.core.persistence.follow.poll_log`) read the log again only
        when it differs from the one seen before. The default, None, means "unknown":
        every poll reads.
        """
        return None

    async def lock_writer(self, id: str) -> None:  # noqa: B027 - optional hook with a no-op default
        """Make this process the one writer of ``id``, or raise ``SESSION_LOCKED`` naming the holder.

        Called before ``id`` is read for a load or tracked for a create, so a refused
        writer has read and appended nothing. The claim lasts until :meth:`close` (or
        the process's end) or :meth:`release_writer`. A backend whose storage only this
        process sees keeps the no-op default.
        """

    async def release_writer(self, id: str) -> None:  # noqa: B027 - optional hook with a no-op default
        """Give up this process's writer claim of ``id`` (a no-op when it holds none).

        The coordinator calls it when it retires a session (``session/disposed``): its
        live owner is gone and every event it logged is durable. Called on the chain of
        ``id``, so a later load or create of ``id`` claims it again first. Raises
        :class:`PersistenceError` when the storage cannot be reached; the claim then
        ends with :meth:`close` (or, for a lease, its expiry).
        """

    async def close(self) -> None:  # noqa: B027 - optional hook with a no-op default
        """Release the storage; awaited once, after the coordinator's dispose drain."""
