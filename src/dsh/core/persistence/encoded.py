"""Session events as the coordinator holds them: encoded once, when it takes its snapshot.

The write path snapshots every logged event (a listener may still change the logged
dict afterwards) and every durable backend then serializes it. Encoding the event's
``data`` to its compact JSON text at snapshot time does both at once: the text is an
immutable snapshot, and it is what storage writes. An :data:`EncodedEvent` is a plain
tuple of strings and ints, which the cyclic garbage collector stops tracking after
one pass, so a long buffer costs it nothing.

:class:`EncodedEvents` is a batch of them that reads as a sequence of
:class:`~dsh.core.session.SessionEvent` (each event decoded afresh when accessed), so
a backend that wants dicts gets dicts, and one that writes JSON takes
:attr:`EncodedEvents.records` or :meth:`EncodedEvents.lines` as they are. Backends
reach it through :meth:`PersistenceBackend.encoded_batch
<dsh.core.persistence.backend.PersistenceBackend.encoded_batch>`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TypeAlias, overload

from dsh.core.session import SessionEvent, dumps_json, event_line, json_snapshot

EncodedEvent: TypeAlias = tuple[str, int, int, str]
"""``(type, seq, time, data)``: an event's envelope and the compact JSON text of its ``data``."""

_NOT_ENCODABLE = (TypeError, ValueError, RecursionError)


def encode_event(event: SessionEvent) -> EncodedEvent:
    """The snapshot of ``event`` as an :data:`EncodedEvent` (compact, non-ASCII as-is).

    ``event`` is trusted to be JSON, as :meth:`Session.append
    <dsh.core.session.Session.append>` and :func:`~dsh.core.persistence.assert_serializable`
    leave it: the encoder writes a tuple as an array and a non-``str`` scalar key as
    a string. Data it cannot encode goes through :func:`~dsh.core.session.json_snapshot`,
    which raises :class:`~dsh.core.session.NotJsonError` naming the offender (or
    returns a plain copy, which is encoded instead). Raises ``KeyError`` when the
    envelope lacks a key.
    """
    kind = event["type"]
    seq = event["seq"]
    time = event["time"]
    data = event["data"]
    if type(kind) is not str or type(seq) is not int or type(time) is not int:
        kind, seq, time = _plain_envelope(kind, seq, time)
    try:
        return (kind, seq, time, dumps_json(data))
    except _NOT_ENCODABLE:
        return (kind, seq, time, dumps_json(json_snapshot(data)))


def _plain_envelope(kind: object, seq: object, time: object) -> tuple[str, int, int]:
    """The envelope with subclasses of ``str``/``int`` (an enum member, say) made plain."""
    if isinstance(kind, str) and isinstance(seq, int) and isinstance(time, int) and bool not in (type(seq), type(time)):
        return str.__str__(kind), int.__int__(seq), int.__int__(time)
    raise TypeError(
        f"not a session event envelope: type {kind!r}, seq {seq!r}, time {time!r} "
        "(expected a str type and int seq and time, as Session.append logs them)"
    )


class EncodedEvents(Sequence[SessionEvent]):
    """An immutable batch of :data:`EncodedEvent` records, readable as session events.

    Indexing or iterating decodes each event afresh (``{type, seq, time, data}``, a
    new dict every time), so a reader owns what it gets. :attr:`records` and
    :meth:`lines` give the encoded form without decoding anything.
    """

    __slots__ = ("_records",)

    def __init__(self, records: Sequence[EncodedEvent]) -> None:
        self._records = tuple(records)

    @classmethod
    def of(cls, events: Sequence[SessionEvent]) -> EncodedEvents:
        """``events`` itself when it is already a batch, else a batch encoding each of them now."""
        if type(events) is cls:
            return events
        return cls([encode_event(event) for event in events])

    @property
    def records(self) -> tuple[EncodedEvent, ...]:
        """The encoded events, in order."""
        return self._records

    @property
    def seqs(self) -> list[int]:
        """The ``seq`` of each event, in order."""
        return [record[1] for record in self._records]

    def lines(self) -> list[str]:
        """The JSONL line of each event, without newline: what :func:`~dsh.core.session.session_event_line` writes."""
        return [event_line(kind, seq, time, data) for kind, seq, time, data in self._records]

    def __len__(self) -> int:
        return len(self._records)

    @overload
    def __getitem__(self, index: int) -> SessionEvent: ...

    @overload
    def __getitem__(self, index: slice) -> list[SessionEvent]: ...

    def __getitem__(self, index: int | slice) -> SessionEvent | list[SessionEvent]:
        if isinstance(index, slice):
            return [_decode(record) for record in self._records[index]]
        return _decode(self._records[index])

    def __iter__(self) -> Iterator[SessionEvent]:
        return map(_decode, self._records)

    def __repr__(self) -> str:
        return f"EncodedEvents({list(self._records)!r})"


def _decode(record: EncodedEvent) -> SessionEvent:
    kind, seq, time, data = record
    return {"type": kind, "seq": seq, "time": time, "data": json.loads(data)}
