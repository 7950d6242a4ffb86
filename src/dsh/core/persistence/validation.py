"""Checks shared by every backend: serializability and seed/prefix agreement (SPEC §4.1)."""

from __future__ import annotations

from collections.abc import Sequence

from dsh.core.persistence.errors import PersistenceError
from dsh.core.session import SessionEvent, dumps_json, is_json_value


def assert_serializable(events: Sequence[SessionEvent]) -> None:
    """Raise :class:`PersistenceError` (``NOT_SERIALIZABLE``) for the first event that is not JSON.

    The message names the event's type and seq so the producer can be found.
    """
    for event in events:
        if not is_json_value(event):
            raise PersistenceError(
                f'event "{event["type"]}" carries non-JSON-serializable data (seq {event["seq"]})',
                "NOT_SERIALIZABLE",
            )


def seed_covers_prefix(seed: Sequence[SessionEvent], prefix: Sequence[SessionEvent]) -> bool:
    """True when ``seed`` starts with exactly ``prefix``.

    Events are compared by their serialized JSON text (full payload and key order,
    not just the envelope), so a seed whose data drifted from the stored log does not
    count as covering it.
    """
    if len(prefix) > len(seed):
        return False
    return all(dumps_json(stored) == dumps_json(live) for stored, live in zip(prefix, seed, strict=False))
