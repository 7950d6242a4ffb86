"""The session: an append-only log of events, the single source of truth (SPEC §3.3).

What the model sees is derived from the log (:meth:`Session.derive_messages`); whether
a turn is open is read from the log too (:func:`is_turn_open`), never from flags,
because an append can raise *after* its event was stored (a throwing listener).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import repeat
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar, overload

from dsh.core.errors import HarnessError
from dsh.core.llm.codec import convert
from dsh.core.session import clock
from dsh.core.session.codec import _payloads, event_class, payload_type
from dsh.core.session.derive import Derivation
from dsh.core.session.jsonvalue import NotJsonError, check_json
from dsh.core.session.types import (
    SESSION_FORMAT_VERSION,
    SessionEvent,
    SessionEventBase,
    SessionHeader,
    SessionId,
    TurnEndEvent,
    TurnStartEvent,
    UntypedEvent,
)

if TYPE_CHECKING:
    from dsh.core.llm.types import Message


class EventLog(Sequence[SessionEvent]):
    """A read-only live view of a session's events (no copy per access).

    Indexing, slicing, ``len``, iteration and ``reversed`` read the session's own
    list; the view follows later appends. The events are the logged immutable values.
    A view compares equal to any sequence with equal items.
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


def _not_an_event(index: int, event: object) -> HarnessError:
    return HarnessError(
        f"seed event at index {index} is not a session event (got {type(event).__name__}): "
        "seed with event values, such as those SessionPersistence.load returns or parse_session_event builds",
        "INVALID_SEED",
    )


_EVENT_CLASSES = (SessionEventBase, UntypedEvent)
_seq_of = attrgetter("seq")


def _seed_log(seed: Iterable[SessionEvent]) -> list[SessionEvent]:
    log = list(seed)
    # The usual seed (a loaded log) passes both checks in C-speed map loops; a bad one is located below.
    if all(map(isinstance, log, repeat(_EVENT_CLASSES))) and list(map(_seq_of, log)) == list(range(len(log))):
        return log
    for index, event in enumerate(log):
        if not isinstance(event, _EVENT_CLASSES):
            raise _not_an_event(index, event)
        if event.seq != index:
            raise HarnessError(
                f"seed event at index {index} has seq {event.seq} (expected {index}); seed must be contiguous from 0",
                "INVALID_SEED",
            )
    raise AssertionError(
        "unreachable: a seed failing the fast check has a bad event"
    )  # pragma: no cover - see the fast check


E = TypeVar("E", bound=SessionEventBase)


class Session:
    """One conversation's append-only event log plus its immutable header.

    ``Session(id, seed=None, header=None)``: ``seed`` (optional) holds events with
    ``seq`` contiguous from 0; the log starts with them (they are immutable, so they
    are shared, not copied) and seeding notifies nobody. ``header`` defaults to
    ``SessionHeader(version=1, id=id, created_at=now)``.

    ``on_append`` is called after each :meth:`append` with ``(session, event)``; the
    :class:`~dsh.core.session.store.SessionStore` sets it to emit ``session/event``.
    """

    __slots__ = ("__weakref__", "_derivation", "_events", "_header", "_id", "_view", "on_append")

    def __init__(
        self,
        id: SessionId,
        seed: Iterable[SessionEvent] | None = None,
        header: SessionHeader | None = None,
    ) -> None:
        self._id = id
        self._events: list[SessionEvent] = [] if seed is None else _seed_log(seed)
        self._view = EventLog(self._events)
        self._derivation: Derivation | None = None  # made by the first derive_messages()
        if header is None:
            header = SessionHeader(version=SESSION_FORMAT_VERSION, id=id, created_at=clock.now_ms())
        self._header = header
        self.on_append: Callable[[Session, SessionEvent], None] | None = None

    def __repr__(self) -> str:
        return f"<Session {self._id!r} seq={len(self._events)}>"

    @property
    def id(self) -> SessionId:
        return self._id

    @property
    def header(self) -> SessionHeader:
        """The out-of-log metadata (``version``, ``id``, ``created_at``, ``cwd?``, ``parent_session?``)."""
        return self._header

    @property
    def events(self) -> EventLog:
        """The log as a read-only live view; ``events[i].seq == i``."""
        return self._view

    @property
    def seq(self) -> int:
        """The ``seq`` the next appended event gets (= the number of events)."""
        return len(self._events)

    @overload
    def append(self, kind: type[E], data: object) -> E: ...

    @overload
    def append(self, kind: str, data: object) -> SessionEvent: ...

    def append(self, kind: type[SessionEventBase] | str, data: object) -> SessionEvent:
        """Log an event of ``kind`` carrying ``data`` and return it, with ``seq`` and ``time`` filled.

        ``kind`` is an event class and ``data`` its payload value
        (``append(TurnStartEvent, TurnStartData(...))``), or an event type name and
        its JSON data: a registered type's data is checked and converted to its
        payload class (MALFORMED when it does not fit), any other type is logged as
        an :class:`UntypedEvent` (data must be JSON, else :class:`NotJsonError`; the
        log takes it over: the caller must not change it afterwards).
        Nothing is logged when the data is refused. The event is stored *before*
        ``on_append`` runs: if the hook (a ``session/event`` listener) raises, the
        error propagates with the event already in the log.
        """
        events = self._events
        expected = _payloads.get(kind)  # the payload class of an event class already seen, else None
        if expected is None:
            if type(kind) is not str:
                expected = _payload_of(kind)
            else:
                cls = event_class(kind)
                if cls is None:
                    _check_json(kind, data)
                    event: SessionEvent = UntypedEvent(type=kind, seq=len(events), time=clock.now_ms(), data=data)
                else:
                    payload: object = convert(data, payload_type(cls), f'"{kind}" event data')
                    event = cls(seq=len(events), time=clock.now_ms(), data=payload)  # type: ignore[call-arg]
        if expected is not None:
            if type(data) is not expected and not isinstance(data, expected):
                raise _wrong_data(kind, expected, data)
            event = kind(seq=len(events), time=clock.now_ms(), data=data)  # type: ignore[call-arg, operator]
        events.append(event)
        hook = self.on_append
        if hook is not None:
            hook(self, event)
        return event

    def derive_messages(self) -> list[Message]:
        """The model-facing history derived from the log (see :func:`derive_messages`).

        A new list on every call (the caller may change the list); the messages in
        it are the shared immutable values. Incremental: only events appended since
        the previous call are derived (see :class:`~dsh.core.session.derive.Derivation`).
        """
        derivation = self._derivation
        if derivation is None:
            derivation = self._derivation = Derivation()
        return derivation.messages(self._events)


def _payload_of(kind: object) -> type[Any]:
    if isinstance(kind, type) and issubclass(kind, SessionEventBase):
        return payload_type(kind)
    raise HarnessError(
        f"append takes an event class or an event type name, got {type(kind).__qualname__}",
        "INVALID_EVENT_TYPE",
    )


def _wrong_data(kind: Any, expected: type[Any], data: object) -> HarnessError:
    return HarnessError(
        f"{kind.__qualname__} carries {expected.__qualname__}, got {type(data).__qualname__}: "
        f"append({kind.__qualname__}, {expected.__qualname__}(...))",
        "INVALID_EVENT_DATA",
    )


def _check_json(kind: str, data: object) -> None:
    try:
        check_json(data)
    except NotJsonError as error:
        raise NotJsonError(
            f'session event "{kind}" carries non-JSON-serializable data: {error.reason} at {error.path}',
            reason=error.reason,
            path=error.path,
            cause=error,
        ) from error


def _events_of(source: Session | Sequence[SessionEvent]) -> Sequence[SessionEvent]:
    return source.events if isinstance(source, Session) else source


def last_turn_number(source: Session | Sequence[SessionEvent]) -> int:
    """The ``turn`` of the last ``turn/start`` in the log, or 0 when there is none."""
    for event in reversed(_events_of(source)):
        if type(event) is TurnStartEvent:
            return event.data.turn
    return 0


def is_turn_open(source: Session | Sequence[SessionEvent]) -> bool:
    """True when the last ``turn/start``/``turn/end`` in the log is a ``turn/start``."""
    for event in reversed(_events_of(source)):
        kind = type(event)
        if kind is TurnStartEvent:
            return True
        if kind is TurnEndEvent:
            return False
    return False
