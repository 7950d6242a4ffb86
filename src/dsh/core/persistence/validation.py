"""Checks shared by every backend: what an append accepts, and seed/prefix agreement (SPEC §4.1)."""

from __future__ import annotations

from collections.abc import Sequence
from operator import is_

from dsh.core.llm import encode
from dsh.core.persistence.errors import PersistenceError
from dsh.core.session import SessionEvent, SessionEventBase, UntypedEvent, is_json_value


def assert_serializable(events: Sequence[object]) -> None:
    """Raise :class:`PersistenceError` (``NOT_SERIALIZABLE``) for the first item that is no loggable event.

    An item must be a session event value (a typed event, or an :class:`UntypedEvent`
    whose ``data`` is JSON). The message names the event's type and seq (or the
    item's Python type) so the producer can be found.
    """
    for item in events:
        if type(item) is UntypedEvent:
            if not is_json_value(item.data):
                raise PersistenceError(
                    f'event "{item.type}" carries non-JSON-serializable data (seq {item.seq})', "NOT_SERIALIZABLE"
                )
        elif not isinstance(item, SessionEventBase):
            raise PersistenceError(
                f"cannot persist a {type(item).__name__}: append session event values "
                "(those Session.append returns or parse_session_event builds)",
                "NOT_SERIALIZABLE",
            )


def seed_covers_prefix(seed: Sequence[SessionEvent], prefix: Sequence[SessionEvent]) -> bool:
    """True when ``seed`` starts with exactly ``prefix``.

    Events are compared by their encoded JSON (full payload and key order, not just
    the envelope), so a seed whose data drifted from the stored log does not count as
    covering it. The very same value is its own encoding, so a seed sharing the
    stored events is checked without encoding them.
    """
    if len(prefix) > len(seed):
        return False
    if all(map(is_, prefix, seed)):  # a resume seeds with the stored values themselves: checked at C speed
        return True
    return all(stored is live or encode(stored) == encode(live) for stored, live in zip(prefix, seed, strict=False))
