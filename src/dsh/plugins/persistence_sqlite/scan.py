"""Reading event rows back: the preserved prefix and the torn tail (SPEC §4c).

Mirrors the JSONL scan: rows past the last parseable ``turn/end`` that break the
sequence (or hold unparseable ``data``) are a torn tail to delete; damage at or before
it is committed history and raises. ``turn/end`` is recognized by the ``type`` column,
so unparseable tail ``data`` is never fatal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeAlias, cast

from dsh.core.persistence import MISSING, PersistenceError, parse_event_rows, torn_tail
from dsh.core.session import SessionEvent

EventRow: TypeAlias = tuple[int, str, int, str]
"""``(seq, type, time, data)`` as selected from the ``events`` table."""


@dataclass
class RowScan:
    """``preserved``: the contiguous events from seq 0; ``torn_from``: the seq where the
    torn tail starts (:data:`~dsh.core.persistence.MISSING` when no row lies past the prefix)."""

    preserved: list[SessionEvent]
    torn_from: object = field(default=MISSING)


def scan_rows(rows: Sequence[EventRow]) -> RowScan:
    """Scan ``rows`` (ordered by seq) into the preserved prefix and the torn tail.

    Raises :class:`PersistenceError` (``CORRUPT_LOG``) for unparseable ``data`` or a
    seq gap at or before the last parseable ``turn/end`` row. Each row is decoded once
    into its typed event, validated in the same pass, in bulk (see
    :func:`~dsh.core.persistence.parse_event_rows`).
    """
    parsed = parse_event_rows(rows)
    bad, committed = torn_tail(parsed)  # bad: the first row that is unparseable or out of sequence
    if committed:
        item, seq = parsed[bad], rows[bad][0]
        if isinstance(item, Exception):
            raise PersistenceError(f"corrupt session log: unparsable committed event at seq {seq}", "CORRUPT_LOG", item)
        raise PersistenceError(
            f"corrupt session log: seq gap in committed region (expected {bad}, got {seq})", "CORRUPT_LOG"
        )
    if bad < len(parsed):
        return RowScan(cast(list[SessionEvent], parsed[:bad]), bad)
    return RowScan(cast(list[SessionEvent], parsed))
