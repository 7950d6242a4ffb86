"""Reading a JSONL session log back: header, preserved events, committed length (SPEC §4b).

A log is ``<header line>\\n`` followed by one event per line, each ending in ``\\n``.
A crash can leave a *torn tail*: a last line without its newline, or lines after the
last ``turn/end`` that are damaged or out of sequence. Those are dropped (and later
truncated away). Damage at or before the last parseable ``turn/end`` is committed
history and is never silently dropped: :func:`scan_log` raises instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from dsh.core.errors import HarnessError
from dsh.core.persistence import PersistenceError
from dsh.core.session import SessionEvent, SessionHeader, parse_session_event, parse_session_header

NOT_A_HEADER = "corrupt session log: first line is not a session header"


@dataclass
class LogScan:
    """The readable part of a log.

    ``events`` is the longest contiguous prefix (``events[i]["seq"] == i``) and
    ``committed_bytes`` the UTF-8 byte length of the file up to and including the last
    preserved line (the header line when no event is preserved).
    """

    meta: SessionHeader
    events: list[SessionEvent]
    committed_bytes: int


def parse_header_line(line: bytes) -> SessionHeader:
    """The header of a log's first line (without its newline).

    Raises :class:`PersistenceError` (``CORRUPT_LOG``) when the line is not JSON or
    not a ``{"type":"session",...}`` header with an int ``version``, str ``id`` and int
    ``createdAt``. The version itself is not checked here.
    """
    try:
        value = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError) as error:
        raise PersistenceError("corrupt session log: header line is not valid JSON", "CORRUPT_LOG", error) from error
    if not isinstance(value, dict) or value.get("type") != "session":
        raise PersistenceError(NOT_A_HEADER, "CORRUPT_LOG")
    try:
        return parse_session_header(value)
    except HarnessError as error:
        raise PersistenceError(NOT_A_HEADER, "CORRUPT_LOG", error) from error


def _parse_event(line: bytes) -> SessionEvent | Exception:
    """The event on ``line``, or the reason it is unparseable (bad UTF-8, JSON or shape)."""
    try:
        return parse_session_event(json.loads(line.decode("utf-8")))
    except (ValueError, RecursionError, HarnessError) as error:
        return error


def scan_log(buffer: bytes) -> LogScan:
    """Split ``buffer`` (a whole log file) into header, preserved events and committed length.

    Lines are the ``\\n``-terminated pieces; a trailing piece without ``\\n`` is never an
    event. Raises :class:`PersistenceError` (``CORRUPT_LOG``) for a log without a
    complete first line, a bad header, or an unparseable line or seq gap at or before
    the last parseable ``turn/end`` (committed history is damaged).
    """
    pieces = buffer.split(b"\n")
    del pieces[-1]  # the fragment after the last newline (empty when the file ends in one)
    if not pieces:
        raise PersistenceError("empty or header-less session log", "CORRUPT_LOG")
    meta = parse_header_line(pieces[0])
    ends: list[int] = []
    offset = 0
    for piece in pieces:
        offset += len(piece) + 1
        ends.append(offset)
    parsed = [_parse_event(piece) for piece in pieces[1:]]
    last_turn_end = -1
    for index, item in enumerate(parsed):
        if not isinstance(item, Exception) and item["type"] == "turn/end":
            last_turn_end = index
    events: list[SessionEvent] = []
    committed = ends[0]
    for index, item in enumerate(parsed):
        if isinstance(item, Exception):
            if index <= last_turn_end:
                raise PersistenceError(
                    f"corrupt session log: unparsable committed event at line {index + 1}",
                    "CORRUPT_LOG",
                    item,
                )
            break
        if item["seq"] != index:
            if index <= last_turn_end:
                raise PersistenceError(
                    "corrupt session log: seq gap in committed region at line "
                    f"{index + 1} (expected {index}, got {item['seq']})",
                    "CORRUPT_LOG",
                )
            break
        events.append(item)
        committed = ends[index + 1]
    return LogScan(meta, events, committed)
