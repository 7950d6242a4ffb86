"""The ``sessions`` service: creates and tracks live sessions (SPEC §3.4)."""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Generator, Iterable

from msgspec import UNSET

from dsh.core.errors import HarnessError
from dsh.core.session import clock
from dsh.core.session.events import SESSION_CREATED, SESSION_DISPOSED, SESSION_EVENT
from dsh.core.session.fork import fork_prefix
from dsh.core.session.session import Session
from dsh.core.session.types import SESSION_FORMAT_VERSION, SessionEvent, SessionHeader, SessionId, SessionMeta
from dsh.kernel import Context, Service, ServiceKey

_NO_META = SessionMeta()


class SessionStore(Service):
    """The live sessions of this tree, by id (class plugin, no config).

    A session created through the store is owned by the *calling* plugin: while that
    plugin lives, every append is emitted as ``session/event``; disposing it removes the
    session from the store, silences it and emits ``session/disposed``.
    """

    def __init__(self, ctx: Context, config: object = None) -> None:
        super().__init__(ctx, SESSIONS)
        self._sessions: dict[SessionId, Session] = {}
        self._counter = 0

    def create(
        self,
        id: SessionId | None = None,
        *,
        seed: Iterable[SessionEvent] | None = None,
        meta: SessionMeta | None = None,
    ) -> Session:
        """Create, store and announce a session; return it.

        ``id`` defaults to ``session-<n>`` (a per-store counter from 1). ``seed`` starts
        the log (see :class:`Session`: its immutable events are shared, not copied).
        ``meta`` gives the header's ``cwd`` (absolute), ``parent_session``,
        ``seed_length``, a sub-agent's ``parent_call_id``, ``origin`` and
        ``delegation_depth``, and ``created_at`` (default: now).

        Raises ``HarnessError`` when the id is taken (``DUPLICATE_SESSION``), ``cwd`` is
        relative (``INVALID_CWD``) or the seed is invalid, in each case registering
        nothing. A raising ``session/created`` listener rolls the session back and its
        error propagates. The registration is an effect of the calling plugin's fiber.
        """
        if id is None:
            self._counter += 1
            id = f"session-{self._counter}"
        if id in self._sessions:
            raise HarnessError(
                f'session "{id}" already exists (use sessions.get() for the live one, or pick another id)',
                "DUPLICATE_SESSION",
            )
        if meta is None:
            meta = _NO_META
        cwd = meta.cwd
        if cwd is not UNSET and not os.path.isabs(cwd):
            raise HarnessError(f'session cwd must be an absolute path, got "{cwd}"', "INVALID_CWD")
        created_at = meta.created_at
        header = SessionHeader(
            version=SESSION_FORMAT_VERSION,
            id=id,
            created_at=clock.now_ms() if created_at is UNSET else created_at,
            cwd=cwd,
            parent_session=meta.parent_session,
            seed_length=meta.seed_length,
            parent_call_id=meta.parent_call_id,
            origin=meta.origin,
            delegation_depth=meta.delegation_depth,
        )
        session = Session(id, seed, header)
        ctx = self.ctx
        sessions = self._sessions
        key = id

        def emit_event(target: Session, event: SessionEvent) -> None:
            ctx.emit(SESSION_EVENT, target, event)

        def register() -> Generator[Callable[[], None], None, None]:
            session.on_append = emit_event
            sessions[key] = session

            def detach() -> None:
                session.on_append = None
                sessions.pop(key, None)
                try:
                    ctx.emit(SESSION_DISPOSED, session)
                except Exception as error:  # a listener's failure must not stop the creator's teardown
                    ctx.logger.warn('a session/disposed listener of session "%s" failed: %r', key, error)

            yield detach
            ctx.emit(SESSION_CREATED, session)

        ctx.effect(register, f"session {id}")
        return session

    def fork(self, source: Session | SessionId, at_turn: int | None = None, *, id: SessionId | None = None) -> Session:
        """Create a live session whose log is ``source``'s up to the end of turn ``at_turn``; return it.

        ``source`` is a session or the id of a live one; ``at_turn`` defaults to its last
        completed turn (:func:`~dsh.core.session.fork.fork_point` says what is refused,
        code ``INVALID_FORK``). The new session keeps the source's ``cwd`` and records the
        lineage in its header: ``parent_session`` (the source id) and ``seed_length``
        (the number of copied events). ``id`` is as in :meth:`create`, whose rules and
        ownership apply. An unknown source id raises ``SESSION_NOT_FOUND``.
        """
        if isinstance(source, str):
            live = self._sessions.get(source)
            if live is None:
                raise HarnessError(
                    f'no live session "{source}" to fork (fork a stored one through session_persistence)',
                    "SESSION_NOT_FOUND",
                )
            source = live
        prefix = fork_prefix(source.events, at_turn)
        meta = SessionMeta(cwd=source.header.cwd, parent_session=source.id, seed_length=len(prefix))
        return self.create(id, seed=prefix, meta=meta)

    def get(self, id: SessionId) -> Session | None:
        """The live session with this id, or None."""
        return self._sessions.get(id)

    def list(self) -> builtins.list[Session]:
        """The live sessions in creation order."""
        return builtins.list(self._sessions.values())


SESSIONS: ServiceKey[SessionStore] = ServiceKey("sessions")
"""The key of the :class:`SessionStore` service (``inject: ["sessions"]``)."""
