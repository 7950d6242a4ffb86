"""PersistenceCoordinator: the write path every backend shares (SPEC §4.3).

The coordinator turns a live :class:`~dsh.core.session.Session` into a durable log
over a backend's storage hooks:

* ``session/created`` starts :meth:`PersistenceCoordinator.init_for`, which binds the
  live session to its stored log (one of four adoption cases, below);
* ``session/event`` puts each logged event into a write-behind buffer per session.
  Events are immutable values, so the buffer holds the logged event itself, and the
  backend encodes it once, when it writes it. Every :data:`EARLY_WRITE` events of a
  session (at a phase its id sets) the buffer is written, as a checkpoint would, when
  the backend can write it at once (see :meth:`PersistenceCoordinator._buffer`). This listener goes before the
  listeners already installed, so the buffer holds every event ``Session.append``
  logged, even one that a later listener rejects by raising (the event is in the log
  then, so it is persisted too);
* ``session/checkpoint`` writes the buffered events that storage does not hold yet
  (:meth:`~dsh.core.persistence.backend.PersistenceBackend.write_batch`: they survive
  the process's death, not necessarily the machine's) and trims the buffer once they
  are written; when nothing precedes it, a backend that can write them at once does so
  before the listener returns (no task, nothing for the dispatch to await);
* ``session/flush`` appends the buffered events that storage does not hold yet and
  trims the buffer only once they are durable; it also syncs what checkpoints wrote
  (:meth:`~dsh.core.persistence.backend.PersistenceBackend.sync_log`) when nothing is
  left to append;
* ``session/disposed`` retires the session (:meth:`PersistenceCoordinator.retire`): once
  it is flushed, the coordinator forgets it and gives up the writer claim of its id;
* disposing the backend's fiber drains every buffer, then closes the backend.

Per id, operations run strictly in call order on a *chain*: each one starts once the
previous one settled, whether it succeeded or failed (a failure is reported to its own
caller only). Chained operations never await another chained operation of the same
id; they call the un-chained ``_*_core`` helpers instead, so a chain cannot deadlock.

One writer: before reading a log to load or adopt it, before tracking a new id, and
before deleting one,
the coordinator claims the backend's writer lock of the id
(:meth:`~dsh.core.persistence.backend.PersistenceBackend.lock_writer`); a session
another process writes is refused there with ``SESSION_LOCKED``.

Cancellation: cancelling whoever awaits an operation does not cancel the operation;
it still completes or fails, and the next operation for that id waits for it.

Adoption cases of ``init_for(session)`` (``id = session.header.id``):

1. the id is tracked without a live owner (public ``create``/``load``): the session
   claims it if its events start with what is stored, and its extra events are
   appended; a tracked id owned by another live session is refused, unless that
   session never wrote anything and has nothing buffered (its id is then released);
2. untracked, and storage holds a log in exactly this session's scope: adopted if the
   session's events start with the stored log; a torn tail is cut, but an open turn
   is *not* closed (the live session is still writing it); the live suffix is appended;
3. untracked and nothing stored in scope: created like ``create(header)`` (refused if
   any scope holds the id), then the session's pre-existing events are appended once.

The pre-existing events are the session's own logged events, shared, not copied:
the log is append-only and its events are immutable. Case 1 compares them with the
stored log by value (:func:`~dsh.core.persistence.seed_covers_prefix`). While the
caller still holds what :meth:`~PersistenceCoordinator.load` returned for that state,
those events *are* the stored log, so they are compared with instead of reading the
log back (a resume seeds its session with them, which then compares at once).
"""

from __future__ import annotations

import asyncio
import weakref
import zlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

from msgspec import UNSET

from dsh.core.persistence.backend import MISSING, PersistenceBackend
from dsh.core.persistence.errors import PersistenceError
from dsh.core.persistence.service import LoadedSession
from dsh.core.persistence.validation import assert_serializable, seed_covers_prefix
from dsh.core.session import (
    SESSION_CHECKPOINT,
    SESSION_CREATED,
    SESSION_DISPOSED,
    SESSION_EVENT,
    SESSION_FLUSH,
    SESSION_FORMAT_VERSION,
    SESSIONS,
    Session,
    SessionEvent,
    SessionHeader,
    interrupted_turn_closers,
)
from dsh.kernel import Context

T = TypeVar("T")


@dataclass
class _State:
    """What the coordinator knows about one tracked id.

    ``loaded`` refers (weakly: it is the caller's) to what :meth:`load` returned
    for this state, whose events start with the stored log. ``unsynced`` is True
    while storage holds written events that are not synced yet.
    """

    meta: SessionHeader
    cursor: int
    materialized: bool
    owner: Session | None = None
    loaded: weakref.ref[LoadedSession] | None = None
    unsynced: bool = False

    def known_log(self) -> list[SessionEvent] | None:
        """The stored log (``cursor`` events) as :meth:`load` returned it, or None once that is gone."""
        loaded = None if self.loaded is None else self.loaded()
        if loaded is None or len(loaded.events) < self.cursor:
            return None
        return loaded.events[: self.cursor]


EARLY_WRITE = 64
"""Events a session buffers before the coordinator writes them without waiting for a checkpoint."""


def early_write_phase(id: str) -> int:
    """Where in its seq the session ``id`` writes early: it does so after event seq ``n`` when
    ``(n + 1 + phase) % EARLY_WRITE == 0``.

    A hash of the id (CRC-32), so the phase is the same in every process and spreads
    sessions evenly: a thousand streams started together do not all reach their early
    write in the same chunk, where together they would stall every stream in flight.
    """
    return zlib.crc32(id.encode("utf-8", "surrogatepass")) % EARLY_WRITE


def cwd_of(meta: SessionHeader) -> str | None:
    """The header's cwd, None when it has none (the no-cwd scope)."""
    cwd = meta.cwd
    return None if cwd is UNSET else cwd


def _check_version(id: str, meta: SessionHeader) -> None:
    version = meta.version
    if version != SESSION_FORMAT_VERSION:
        raise PersistenceError(
            f'unsupported session format version {version} for "{id}" (only v{SESSION_FORMAT_VERSION} is supported)',
            "UNSUPPORTED_VERSION",
        )


def _rejected(error: BaseException) -> asyncio.Future[Any]:
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    future.set_exception(error)
    return future


async def _after(previous: asyncio.Task[Any] | None, op: Callable[[], Awaitable[T]]) -> T:
    if previous is not None:
        await asyncio.wait((previous,))
    return await op()


class PersistenceCoordinator:
    """The shared orchestration over one backend; see the module docstring.

    Construct it in the backend service's constructor with the backend's own context:
    its listeners and its dispose drain then belong to the backend's fiber. Live
    sessions already in the store are adopted at once (a reloaded backend never sees
    their ``session/created``).
    """

    def __init__(self, ctx: Context, backend: PersistenceBackend) -> None:
        self._backend = backend
        self._logger = ctx.logger
        self._states: dict[str, _State] = {}
        self._buffers: dict[Session, list[SessionEvent]] = {}
        self._phases: dict[Session, int] = {}  # the early_write_phase of each buffering session, hashed once
        self._inits: dict[Session, asyncio.Task[None]] = {}
        self._chains: dict[str, asyncio.Task[Any]] = {}
        self._retiring: set[asyncio.Task[None]] = set()
        ctx.on(SESSION_CREATED, self.init_for)
        ctx.on(SESSION_EVENT, self._buffer, prepend=True)
        ctx.on(SESSION_FLUSH, self.flush)
        ctx.on(SESSION_CHECKPOINT, self.checkpoint)
        ctx.on(SESSION_DISPOSED, self.retire)
        ctx.effect(lambda: self._drain, f"{backend.name} drain")
        for session in ctx[SESSIONS].list():
            self.init_for(session)

    @property
    def inits(self) -> Mapping[Session, asyncio.Task[None]]:
        """The adoption task of each live session seen, keyed by the Session object (read-only)."""
        return MappingProxyType(self._inits)

    # ------------------------------------------------------------------ public API
    def create(self, meta: SessionHeader) -> Awaitable[None]:
        """Track a new, not yet materialized session with header ``meta``."""
        return self._serialize(meta.id, lambda: self._create_core(meta))

    def append(self, id: str, events: Sequence[SessionEvent]) -> Awaitable[None]:
        """Append a contiguous batch; the list is read and checked now.

        A batch holding anything but event values (or an untyped event whose data is
        not JSON) is rejected through the returned awaitable.
        """
        batch = list(events)
        try:
            assert_serializable(batch)
        except PersistenceError as error:
            return _rejected(error)
        return self._serialize(id, lambda: self._append_core(id, batch))

    def load(self, id: str) -> Awaitable[LoadedSession]:
        """Read ``id`` back, durably repairing a torn tail or a turn a crash left open."""
        return self._serialize(id, lambda: self._load_core(id))

    async def has(self, id: str) -> bool:
        """True when ``id`` is durably stored."""
        state = self._states.get(id)
        if state is None:
            return await self._backend.load_stored(id) is not None
        if state.materialized:
            return True
        return await self._backend.load_live(id, cwd_of(state.meta)) is not None

    def delete(self, id: str) -> Awaitable[None]:
        """Remove ``id`` from storage and forget it."""
        return self._serialize(id, lambda: self._delete_core(id))

    # ------------------------------------------------------------------ write path
    def init_for(self, session: Session) -> asyncio.Task[None]:
        """Start (once per Session object) binding ``session`` to its stored log.

        The session's current events are taken now as its seed (shared: logged events
        are immutable). The returned task fails on an id collision; a flush of the
        session re-raises that failure.
        """
        existing = self._inits.get(session)
        if existing is not None:
            return existing
        seed = list(session.events)
        state = self._states.get(session.header.id)
        known = state.known_log() if state is not None and state.owner is None else None
        task = asyncio.get_running_loop().create_task(self._adopt(session, seed, known))
        task.add_done_callback(lambda done: self._init_settled(session, done))
        self._inits[session] = task
        return task

    def flush(self, session: Session) -> asyncio.Task[None]:
        """Make every event buffered for ``session`` durable.

        Waits for the session's adoption first (its failure is raised here). The
        buffer is trimmed only after a successful append, so a failed flush can be
        retried and loses nothing.
        """
        return asyncio.get_running_loop().create_task(self._flush(session))

    def checkpoint(self, session: Session) -> asyncio.Future[None] | None:
        """Write every event buffered for ``session``, without waiting for a sync.

        Like :meth:`flush`, but the events need only survive this process's death;
        the next flush makes them durable. A failed checkpoint loses nothing: the
        buffer is trimmed only after a successful write.

        The write is done before this returns, and None is returned (the dispatch has
        nothing to await), when nothing else of the session's id is in flight, its
        adoption succeeded and either nothing is buffered or its log is stored and the
        backend writes the buffer at once
        (:meth:`~dsh.core.persistence.backend.PersistenceBackend.write_batch_now`); a
        failure of that write is returned as a failed future. Otherwise the write is
        chained like a flush's and its task is returned.
        """
        try:
            if self._write_now(session):
                return None
        except Exception as error:
            return _rejected(error)
        return asyncio.get_running_loop().create_task(self._flush(session, sync=False))

    def _write_now(self, session: Session) -> bool:
        """Write the buffer of ``session`` now, when nothing precedes it (:meth:`checkpoint`); False when it cannot."""
        id = session.header.id
        if id in self._chains:
            return False
        init = self._inits.get(session)
        if init is not None and (not init.done() or init.cancelled() or init.exception() is not None):
            return False
        buffer = self._buffers.get(session)
        if not buffer:
            return True
        state = self._states.get(id)
        if state is None or not state.materialized:
            return False
        count = len(buffer)
        # seqs only grow along a buffer, so matching ends mean it continues the log without a gap
        if buffer[0].seq != state.cursor or buffer[-1].seq != state.cursor + count - 1:
            return False
        if not self._backend.write_batch_now(state.meta, buffer[:]):
            return False
        state.unsynced = True
        state.cursor += count
        del buffer[:count]
        return True

    def _buffer(self, session: Session, event: SessionEvent) -> None:
        """Buffer a logged event (the immutable value itself); every :data:`EARLY_WRITE` events, write them early.

        The early writes of a session fall at the :func:`early_write_phase` of its id.

        A long stream (thousands of chunk events before the next checkpoint) is then
        encoded and written a batch at a time while it streams, not all at its end,
        when a thousand sessions ending together would stall every stream in flight
        for the encoding. The early write is the checkpoint's on-loop write
        (:meth:`_write_now`), so a backend that cannot write at once, a session not
        stored yet or anything else of its id in flight leave the events buffered
        for the next checkpoint, as before; a failed early write is logged and the
        events stay buffered (the checkpoint reports the failure).
        """
        buffer = self._buffers.get(session)
        if buffer is None:
            buffer = self._buffers[session] = []
            self._phases[session] = early_write_phase(session.header.id)
        buffer.append(event)
        if (event.seq + 1 + self._phases[session]) % EARLY_WRITE == 0:
            try:
                self._write_now(session)
            except Exception as error:
                self._logger.warn(
                    'early write of session "%s" failed (kept for its checkpoint): %s', session.header.id, error
                )

    def _init_settled(self, session: Session, task: asyncio.Task[None]) -> None:
        error = None if task.cancelled() else task.exception()
        if error is not None:
            self._logger.warn('session "%s" is not persisted: %s', session.header.id, error)

    async def _flush(self, session: Session, *, sync: bool = True) -> None:
        init = self._inits.get(session)
        if init is not None:
            await asyncio.shield(init)
        await self._serialize(session.header.id, lambda: self._drain_buffer(session, sync))

    async def _drain_buffer(self, session: Session, sync: bool) -> None:
        id = session.header.id
        state = self._states.get(id)
        buffer = self._buffers.get(session)
        if buffer:
            batch = buffer[:]
            cursor = 0 if state is None else state.cursor
            fresh = [event for event in batch if event.seq >= cursor]
            if fresh:
                await self._append_core(id, fresh, sync=sync)
            del buffer[: len(batch)]
            state = self._states.get(id)
        if sync and state is not None and state.unsynced:
            await self._backend.sync_log(state.meta)
            state.unsynced = False

    async def _adopt(self, session: Session, seed: list[SessionEvent], known: list[SessionEvent] | None) -> None:
        """``known``: the stored log of ``id`` as :meth:`load` returned it, when still held."""
        id = session.header.id
        state = self._states.get(id)
        if state is not None:
            if state.owner is None:
                await self._claim(id, state, session, seed, known)
                return
            if state.materialized or self._buffers.get(state.owner):
                raise PersistenceError(
                    f'session "{id}" is already bound to a different live session in this backend (id collision)',
                    "ID_COLLISION",
                )
            del self._states[id]
        if await self._serialize(id, lambda: self._adopt_live_prefix(session, seed)):
            return
        meta = session.header
        await self._serialize(id, lambda: self._create_core(meta, owner=session))
        if seed:
            await self._serialize(id, lambda: self._append_core(id, seed))

    async def _claim(
        self, id: str, state: _State, session: Session, seed: list[SessionEvent], known: list[SessionEvent] | None
    ) -> None:
        if state.cursor > 0:
            persisted = known if known is not None and len(known) == state.cursor else None
            if persisted is None:
                stored = await self._backend.load_stored(id)
                persisted = [] if stored is None else stored.events[: state.cursor]
            if len(persisted) != state.cursor or not seed_covers_prefix(seed, persisted):
                raise PersistenceError(
                    f'session "{id}" is already persisted with {state.cursor} event(s) that do not match '
                    "this live session (id collision)",
                    "ID_COLLISION",
                )
        state.owner = session
        state.loaded = None
        suffix = seed[state.cursor :]
        if suffix:
            await self._serialize(id, lambda: self._append_core(id, suffix))

    async def _adopt_live_prefix(self, session: Session, seed: list[SessionEvent]) -> bool:
        id = session.header.id
        await self._backend.lock_writer(id)
        stored = await self._backend.load_live(id, cwd_of(session.header))
        if stored is None:
            return False
        _check_version(id, stored.meta)
        if not seed_covers_prefix(seed, stored.events):
            raise PersistenceError(
                f'session "{id}" already has a persisted log on disk that does not match this live session '
                "(id collision)",
                "ID_COLLISION",
            )
        if stored.torn_marker is not MISSING:
            await self._backend.commit_repair(stored.meta, stored.torn_marker, [])
        count = len(stored.events)
        self._states[id] = _State(stored.meta, count, True, session)
        if len(seed) > count:
            await self._append_core(id, seed[count:])
        return True

    def retire(self, session: Session) -> asyncio.Task[None]:
        """Forget ``session``, whose live owner is gone, once everything it logged is durable.

        One operation on the id's chain, after the session's adoption, appends and
        syncs what it buffered, then drops what the coordinator keeps of it (its
        buffer, its adoption, the state of its id when the session still owns it) and
        gives up the writer claim of the id
        (:meth:`~dsh.core.persistence.backend.PersistenceBackend.release_writer`), so a
        process that hosts many sessions in turn holds neither their logs nor their
        locks. When the adoption has settled the operation is chained before this
        returns, so a ``load`` of the id called next reads what it wrote. A failure is
        logged and the session is kept: the dispose drain flushes it again and reports
        the failure. The task never raises.
        """
        init = self._inits.get(session)
        queued = None if init is not None and not init.done() else self._chain_retirement(session)
        task = asyncio.get_running_loop().create_task(self._retire(session, queued))
        self._retiring.add(task)
        task.add_done_callback(self._retiring.discard)
        return task

    def _chain_retirement(self, session: Session) -> asyncio.Future[None]:
        return self._serialize(session.header.id, lambda: self._retire_core(session))

    async def _retire(self, session: Session, queued: asyncio.Future[None] | None) -> None:
        try:
            if queued is None:  # the adoption is still running: it chains operations of its own first
                await asyncio.shield(self._inits[session])
                queued = self._chain_retirement(session)
            await queued
        except Exception as error:
            self._logger.warn('session "%s" stays tracked until the backend closes: %s', session.header.id, error)

    async def _retire_core(self, session: Session) -> None:
        init = self._inits.get(session)
        if init is not None:
            await init  # settled: raises the adoption's failure
        await self._drain_buffer(session, sync=True)
        # the buffer is empty now, and a session out of the store logs nothing more
        self._buffers.pop(session, None)
        self._phases.pop(session, None)
        self._inits.pop(session, None)
        id = session.header.id
        state = self._states.get(id)
        if state is not None and state.owner is session:
            del self._states[id]
            await self._backend.release_writer(id)

    # ------------------------------------------------------------------ chained cores
    def _serialize(self, id: str, op: Callable[[], Awaitable[T]]) -> asyncio.Future[T]:
        previous = self._chains.get(id)
        task = asyncio.get_running_loop().create_task(_after(previous, op))
        self._chains[id] = task
        task.add_done_callback(lambda done: self._chain_settled(id, done))
        return asyncio.shield(task)

    def _chain_settled(self, id: str, task: asyncio.Task[Any]) -> None:
        if self._chains.get(id) is task:
            del self._chains[id]

    async def _create_core(self, meta: SessionHeader, owner: Session | None = None) -> None:
        id = meta.id
        await self._backend.lock_writer(id)
        if id in self._states:
            raise PersistenceError(f'session "{id}" already exists in this backend', "SESSION_EXISTS")
        if await self._backend.load_stored(id) is not None:
            raise PersistenceError(
                f'session "{id}" already has a persisted log on disk; load/resume it instead of creating',
                "SESSION_EXISTS",
            )
        self._states[id] = _State(meta, 0, False, owner)

    async def _append_core(self, id: str, events: Sequence[SessionEvent], *, sync: bool = True) -> None:
        if not events:
            return
        state = self._states.get(id)
        if state is None:
            await self._load_core(id)
            state = self._states[id]
        seqs = [event.seq for event in events]
        if seqs != list(range(state.cursor, state.cursor + len(seqs))):
            index, seq = next((index, seq) for index, seq in enumerate(seqs) if seq != state.cursor + index)
            raise PersistenceError(
                f'append seq mismatch for "{id}": expected {state.cursor + index} at index {index}, got {seq}',
                "SEQ_MISMATCH",
            )
        if sync:
            await self._backend.append_batch(state.meta, events, state.materialized)
            state.unsynced = False
        else:
            await self._backend.write_batch(state.meta, events, state.materialized)
            state.unsynced = True
        state.materialized = True
        state.cursor += len(events)

    async def _load_core(self, id: str) -> LoadedSession:
        await self._backend.lock_writer(id)
        stored = await self._backend.load_stored(id)
        if stored is None:
            raise PersistenceError(f'session "{id}" not found', "SESSION_NOT_FOUND")
        _check_version(id, stored.meta)
        closers = interrupted_turn_closers(stored.events)
        if stored.torn_marker is not MISSING or closers:
            await self._backend.commit_repair(stored.meta, stored.torn_marker, closers)
        loaded = LoadedSession(stored.meta, [*stored.events, *closers])
        self._states[id] = _State(stored.meta, len(loaded.events), True, loaded=weakref.ref(loaded))
        return loaded

    async def _delete_core(self, id: str) -> None:
        await self._backend.lock_writer(id)
        await self._backend.delete_stored(id)
        self._states.pop(id, None)

    # ------------------------------------------------------------------ dispose
    def _sessions_to_flush(self) -> list[Session]:
        """The sessions with buffered events or with written events not synced yet."""
        sessions = dict.fromkeys(session for session, buffer in self._buffers.items() if buffer)
        sessions.update(dict.fromkeys(state.owner for state in self._states.values() if state.unsynced and state.owner))
        return list(sessions)

    async def _drain(self) -> None:
        """Dispose drain: settle adoptions, flush every buffer, settle chains, close.

        Flush failures are raised together as an ``ExceptionGroup`` named
        ``<backend.name> dispose failed``; the backend is closed either way (a close
        failure is raised only when the drain itself succeeded).
        """
        inits = list(self._inits.values())
        if inits:
            await asyncio.wait(inits)
        retiring = list(self._retiring)
        if retiring:
            await asyncio.wait(retiring)
        flushes = [self.flush(session) for session in self._sessions_to_flush()]
        results = await asyncio.gather(*flushes, return_exceptions=True)
        errors = [result for result in results if isinstance(result, Exception)]
        chains = list(self._chains.values())
        if chains:
            await asyncio.wait(chains)
        failure = ExceptionGroup(f"{self._backend.name} dispose failed", errors) if errors else None
        try:
            await self._backend.close()
        except Exception as error:
            if failure is None:
                raise
            failure.add_note(f"closing the backend failed too: {error!r}")
        if failure is not None:
            raise failure
