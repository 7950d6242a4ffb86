"""Reading a JSONL session log back: header, preserved events, committed length (SPEC §4b).

A log is ``<header line>\\n`` followed by one event per line, each ending in ``\\n``.
A crash can leave a *torn tail*: a last line without its newline, or lines after the
last ``turn/end`` that are damaged or out of sequence. Those are dropped (and later
truncated away). Damage at or before the last parseable ``turn/end`` is committed
history and is never silently dropped: :func:`scan_log` raises instead.

Each line is decoded once into its typed event, validated in the same pass, in bulk
(see :func:`~dsh.core.persistence.parse_event_lines`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from dsh.core.errors import HarnessError
from dsh.core.persistence import PersistenceError, loads_stored_json, parse_event_lines, torn_tail
from dsh.core.session import SessionEvent, SessionHeader, parse_session_header
from dsh.plugins.persistence_jsonl.checksum import CHECKSUM_MISMATCH, ChecksumError, broken_seals, check

NOT_A_HEADER = "corrupt session log: first line is not a session header"


@dataclass
class LogScan:
    """The readable part of a log.

    ``events`` is the longest contiguous prefix (``events[i].seq == i``) and
    ``committed_bytes`` the UTF-8 byte length of the file up to and including the last
    preserved line (the header line when no event is preserved).
    """

    meta: SessionHeader
    events: list[SessionEvent]
    committed_bytes: int


def _header_from_text(text: str) -> SessionHeader:
    try:
        value = loads_stored_json(text)  # one line: lone surrogate escapes allowed
    except (ValueError, RecursionError) as error:
        raise PersistenceError("corrupt session log: header line is not valid JSON", "CORRUPT_LOG", error) from error
    if not isinstance(value, dict) or value.get("type") != "session":
        raise PersistenceError(NOT_A_HEADER, "CORRUPT_LOG")
    try:
        return parse_session_header(value)
    except HarnessError as error:
        raise PersistenceError(NOT_A_HEADER, "CORRUPT_LOG", error) from error


def parse_header_line(line: bytes) -> SessionHeader:
    """The header of a log's first line (without its newline).

    Raises :class:`PersistenceError` (``CORRUPT_LOG``) when the line is not JSON, not a
    ``{"type":"session",...}`` header with an int ``version``, str ``id`` and int
    ``createdAt``, or sealed with a checksum its content does not match. The version
    itself is not checked here.
    """
    try:
        check(line)
    except ChecksumError as error:
        raise PersistenceError(f"corrupt session log: header line {error}", "CORRUPT_LOG", error) from error
    try:
        text = line.decode("utf-8")
    except ValueError as error:
        raise PersistenceError("corrupt session log: header line is not valid JSON", "CORRUPT_LOG", error) from error
    return _header_from_text(text)


def _split_lines(buffer: bytes) -> list[bytes]:
    """The ``\\n``-terminated lines of ``buffer`` without their newlines (a trailing piece is none)."""
    end = buffer.rfind(b"\n")
    return buffer[:end].split(b"\n") if end >= 0 else []


def _parse_checked(lines: list[bytes]) -> list[SessionEvent | Exception]:
    """:func:`~dsh.core.persistence.parse_event_lines`, a line whose seal fails as its ChecksumError."""
    parsed = parse_event_lines(lines)
    for index in broken_seals(lines):
        parsed[index] = ChecksumError(CHECKSUM_MISMATCH)
    return parsed


def _byte_length(lines: list[bytes]) -> int:
    """The byte length of ``lines``, each with its newline."""
    return sum(map(len, lines)) + len(lines)


def scan_log(buffer: bytes, path: str | None = None) -> LogScan:
    """Split ``buffer`` (a whole log file) into header, preserved events and committed length.

    Errors name the 1-based line of the file (the header is line 1) and, when given,
    the file's ``path``.

    Lines are the ``\\n``-terminated pieces; a trailing piece without ``\\n`` is never an
    event. A line sealed with a checksum its content does not match counts as
    unparsable (see :mod:`~dsh.plugins.persistence_jsonl.checksum`). Raises
    :class:`PersistenceError` (``CORRUPT_LOG``) for a log without a complete first line,
    a bad header, or an unparsable line or seq gap at or before the last parsable
    ``turn/end`` (committed history is damaged).
    """
    lines = _split_lines(buffer)
    if not lines:
        raise PersistenceError("empty or header-less session log", "CORRUPT_LOG")
    meta = parse_header_line(lines[0])
    parsed = _parse_checked(lines[1:])
    bad, committed = torn_tail(parsed)  # bad: the first line that is a hole or out of sequence
    if committed:
        item = parsed[bad]
        where = f"line {bad + 2}" if path is None else f"line {bad + 2} of {path}"
        if isinstance(item, ChecksumError):
            raise PersistenceError(
                f"corrupt session log: {item} (committed event at {where}; `dsh sessions repair` cuts the log "
                "before it, keeping a copy)",
                "CORRUPT_LOG",
                item,
            )
        if isinstance(item, Exception):
            raise PersistenceError(f"corrupt session log: unparsable committed event at {where}", "CORRUPT_LOG", item)
        raise PersistenceError(
            f"corrupt session log: seq gap in committed region at {where} (expected {bad}, got {item.seq})",
            "CORRUPT_LOG",
        )
    if bad == len(parsed):
        return LogScan(meta, cast(list[SessionEvent], parsed), buffer.rfind(b"\n") + 1)
    return LogScan(meta, cast(list[SessionEvent], parsed[:bad]), _byte_length(lines[: bad + 1]))


def intact_bytes(buffer: bytes) -> int:
    """The byte length of the longest intact start of a log: its header and contiguous valid events.

    Unlike :func:`scan_log` this never refuses committed damage: it is where a repair
    cuts. Raises :class:`PersistenceError` (``CORRUPT_LOG``) when the header itself is
    missing or bad (nothing of the log is intact then).
    """
    lines = _split_lines(buffer)
    if not lines:
        raise PersistenceError("empty or header-less session log", "CORRUPT_LOG")
    parse_header_line(lines[0])
    bad, _committed = torn_tail(_parse_checked(lines[1:]))
    return _byte_length(lines[: bad + 1])
