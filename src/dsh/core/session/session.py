"""The session: an append-only log of events, the single source of truth (SPEC §3.3).

What the model sees is derived from the log (:meth:`Session.derive_messages`); whether
a turn is open is read from the log too (:func:`is_turn_open`), never from flags,
because an append can raise *after* its event was stored (a throwing listener).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, overload

from dsh.core.errors import HarnessError
from dsh.core.session import clock
from dsh.core.session.derive import Derivation
from dsh.core.session.jsonvalue import NotJsonError, check_json, json_snapshot
from dsh.core.session.types import SESSION_FORMAT_VERSION, SessionEvent, SessionHeader, SessionId

if TYPE_CHECKING:
    from dsh.core.llm.types import Message


class EventLog(Sequence[SessionEvent]):
    """A read-only live view of a session's events (no copy per access).

    Indexing, slicing, ``len``, iteration and ``reversed`` read the session's own
    list; the view follows later appends. The events themselves are the logged dicts:
    treat them as read-only. A view compares equal to any sequence with equal items.
    """

    __slots__ = ("_events",)

    def __init__(self, events: list[SessionEvent]) -> None:
        self._events = events

    @overload
    def __getitem__(self, index: int) -> SessionEvent: ...

    @overload
    def __getitem__(self, index: slice) -> list[SessionEvent]: ...

    def __getitem__(self, index: int | slice) -> SessionEvent | list[SessionEvent]:
        return self._events[index]

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[SessionEvent]:
        return iter(self._events)

    def __reversed__(self) -> Iterator[SessionEvent]:
        return self._events.__reversed__()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EventLog):
            return self._events == other._events
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return self._events == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"EventLog({self._events!r})"


_ENVELOPE = ("type", "seq", "time", "data")


def _not_an_event(index: int) -> HarnessError:
    return HarnessError(
        f"seed event at index {index} is not a session event: expected a mapping with a str "
        '"type", int "seq" and "time", and "data" (load seeds with parse_session_event)',
        "INVALID_SEED",
    )


def _seed_log(seed: Iterable[SessionEvent], copy: bool) -> list[SessionEvent]:
    log: list[SessionEvent] = []
    append = log.append
    for index, event in enumerate(seed):
        if type(event) is not dict and not isinstance(event, Mapping):
            raise _not_an_event(index)
        kind = event.get("type")
        time = event.get("time")
        if not isinstance(kind, str) or type(time) is not int or "data" not in event:
            raise _not_an_event(index)
        seq = event.get("seq")
        if type(seq) is not int or seq != index:
            raise HarnessError(
                f"seed event at index {index} has seq {seq} (expected {index}); seed must be contiguous from 0",
                "INVALID_SEED",
            )
        data = event["data"]
        try:
            if copy:
                data = json_snapshot(data)
            else:
                check_json(data)
        except NotJsonError as error:
            raise NotJsonError(
                f'seed event "{kind}" (seq {seq}) carries non-JSON-serializable data: {error.reason} at {error.path}',
                reason=error.reason,
                path=error.path,
                cause=error,
            ) from error
        if copy or type(event) is not dict or tuple(event) != _ENVELOPE:
            event = {"type": kind, "seq": seq, "time": time, "data": data}
        append(event)
    return log


class Session:
    """One conversation's append-only event log plus its immutable header.

    ``Session(id, seed=None, header=None, *, copy_seed=True)``: ``seed`` (optional) must
    hold events with ``seq`` contiguous from 0 and JSON ``data``; the log starts as a
    deep copy of it (later changes to the caller's objects cannot reach the log) and
    seeding notifies nobody. ``header`` defaults to ``{version: 1, id, createdAt: now}``.

    ``copy_seed=False`` hands the seed's events over instead: they are checked the
    same way but not copied, and the log holds them (an event that is not a plain
    dict of exactly ``type, seq, time, data`` gets a new envelope around the same
    ``data``). The caller gives them up: neither it nor anyone it shared them with may
    change them afterwards. A resume hands over the events
    :meth:`SessionPersistence.load <dsh.core.persistence.SessionPersistence.load>`
    returned this way, unchanged (edited events belong in a copied seed). This skips
    one full copy of a long log.

    ``on_append`` is called after each :meth:`append` with ``(session, event)``; the
    :class:`~dsh.core.session.store.SessionStore` sets it to emit ``session/event``.
    """

    __slots__ = ("__weakref__", "_derivation", "_events", "_header", "_id", "_view", "on_append")

    def __init__(
        self,
        id: SessionId,
        seed: Iterable[SessionEvent] | None = None,
        header: SessionHeader | None = None,
        *,
        copy_seed: bool = True,
    ) -> None:
        self._id = id
        self._events: list[SessionEvent] = [] if seed is None else _seed_log(seed, copy_seed)
        self._view = EventLog(self._events)
        self._derivation: Derivation | None = None  # made by the first derive_messages()
        if header is None:
            header = {"version": SESSION_FORMAT_VERSION, "id": id, "createdAt": clock.now_ms()}
        else:
            header = header.copy()
        self._header: SessionHeader = header
        self.on_append: Callable[[Session, SessionEvent], None] | None = None

    def __repr__(self) -> str:
        return f"<Session {self._id!r} seq={len(self._events)}>"

    @property
    def id(self) -> SessionId:
        return self._id

    @property
    def header(self) -> SessionHeader:
        """The out-of-log metadata (``version``, ``id``, ``createdAt``, ``cwd?``, ``parentSession?``).

        A private copy made at construction; do not mutate it.
        """
        return self._header

    @property
    def events(self) -> EventLog:
        """The log as a read-only live view; ``events[i]["seq"] == i``."""
        return self._view

    @property
    def seq(self) -> int:
        """The ``seq`` the next appended event gets (= the number of events)."""
        return len(self._events)

    def append(self, type: str, data: object) -> SessionEvent:
        """Log ``{type, seq, time, data}`` and return the logged event.

        ``data`` must be a JSON value; it is deep-copied, so the returned event holds the
        snapshot, not the caller's object. Non-JSON data raises :class:`NotJsonError`
        and logs nothing. The event is stored *before* ``on_append`` runs: if the hook
        (a ``session/event`` listener) raises, the error propagates with the event
        already in the log.
        """
        try:
            snapshot = json_snapshot(data)
        except NotJsonError as error:
            raise NotJsonError(
                f'session event "{type}" carries non-JSON-serializable data: {error.reason} at {error.path}',
                reason=error.reason,
                path=error.path,
                cause=error,
            ) from error
        event: SessionEvent = {
            "type": type,
            "seq": len(self._events),
            "time": clock.now_ms(),
            "data": snapshot,
        }
        self._events.append(event)
        hook = self.on_append
        if hook is not None:
            hook(self, event)
        return event

    def derive_messages(self) -> list[Message]:
        """The model-facing history derived from the log (see :func:`derive_messages`).

        A fresh deep copy on every call: the caller may change it freely without
        affecting the log or later calls. Incremental: only events appended since the
        previous call are derived (see :class:`~dsh.core.session.derive.Derivation`), so
        a call costs a C-speed copy of the history, not a walk of the whole log.
        """
        derivation = self._derivation
        if derivation is None:
            derivation = self._derivation = Derivation()
        return derivation.messages(self._events)


def _events_of(source: Session | Sequence[SessionEvent]) -> Sequence[SessionEvent]:
    return source.events if isinstance(source, Session) else source


def last_turn_number(source: Session | Sequence[SessionEvent]) -> int:
    """The ``turn`` of the last ``turn/start`` in the log, or 0 when there is none."""
    for event in reversed(_events_of(source)):
        if event["type"] == "turn/start":
            turn: int = event["data"]["turn"]
            return turn
    return 0


def is_turn_open(source: Session | Sequence[SessionEvent]) -> bool:
    """True when the last ``turn/start``/``turn/end`` in the log is a ``turn/start``."""
    for event in reversed(_events_of(source)):
        kind = event["type"]
        if kind == "turn/start":
            return True
        if kind == "turn/end":
            return False
    return False
