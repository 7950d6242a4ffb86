"""Reading event rows back: the preserved prefix and the torn tail (SPEC §4c).

Mirrors the JSONL scan: rows past the last parseable ``turn/end`` that break the
sequence (or hold unparseable ``data``) are a torn tail to delete; damage at or before
it is committed history and raises. ``turn/end`` is recognized by the ``type`` column,
so unparseable tail ``data`` is never fatal.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from dsh.core.errors import HarnessError
from dsh.core.persistence import MISSING, PersistenceError
from dsh.core.session import SessionEvent, parse_session_event

EventRow: TypeAlias = tuple[int, str, int, str]
"""``(seq, type, time, data)`` as selected from the ``events`` table."""


@dataclass
class RowScan:
    """``preserved``: the contiguous events from seq 0; ``torn_from``: the seq where the
    torn tail starts (:data:`~dsh.core.persistence.MISSING` when no row lies past the prefix)."""

    preserved: list[SessionEvent]
    torn_from: object = field(default=MISSING)


def _parse(row: EventRow) -> SessionEvent | Exception:
    """The event of ``row``, or why it is unparseable (bad JSON or a malformed event)."""
    seq, type, time, text = row
    try:
        return parse_session_event({"type": type, "seq": seq, "time": time, "data": json.loads(text)})
    except (ValueError, RecursionError, HarnessError) as error:
        return error


def scan_rows(rows: Sequence[EventRow]) -> RowScan:
    """Scan ``rows`` (ordered by seq) into the preserved prefix and the torn tail.

    Raises :class:`PersistenceError` (``CORRUPT_LOG``) for unparseable ``data`` or a
    seq gap at or before the last parseable ``turn/end`` row.
    """
    parsed = [_parse(row) for row in rows]
    last_turn_end = -1
    for index, (row, event) in enumerate(zip(rows, parsed, strict=True)):
        if row[1] == "turn/end" and not isinstance(event, Exception):
            last_turn_end = index
    preserved: list[SessionEvent] = []
    for index, (row, event) in enumerate(zip(rows, parsed, strict=True)):
        seq = row[0]
        if isinstance(event, Exception):
            if index <= last_turn_end:
                raise PersistenceError(
                    f"corrupt session log: unparsable committed event at seq {seq}", "CORRUPT_LOG", event
                )
            break
        if seq != index:
            if index <= last_turn_end:
                raise PersistenceError(
                    f"corrupt session log: seq gap in committed region (expected {index}, got {seq})",
                    "CORRUPT_LOG",
                )
            break
        preserved.append(event)
    if len(preserved) < len(rows):
        return RowScan(preserved, len(preserved))
    return RowScan(preserved)
