"""A checksum of its own on every JSONL line this backend writes.

A sealed line is the line's JSON object with one more field at its end,
``"crc":"<8 lowercase hex digits>"``: the CRC-32 (``zlib.crc32``) of the line's bytes
before that field, that is of everything up to the ``,"crc":"`` marker. Readers that
do not know the field ignore it (an unknown envelope field), so sealed logs stay
readable by every reader of the SPEC §4b format, and lines written without it (by an
older writer or another implementation) are read as they are.

A single changed byte anywhere in a sealed line is caught: inside the covered part
the CRC differs; inside the digits they no longer match; inside the marker the line
is either no JSON or has lost its checksum field, with the event itself unchanged.
"""

from __future__ import annotations

import zlib

MARKER = b',"crc":"'
"""What precedes the 8 digits of a sealed line."""

SEAL_LENGTH = len(MARKER) + 10
"""Bytes a seal adds at the end of a line: the marker, 8 digits, the closing quote and brace."""

CHECKSUM_MISMATCH = "checksum mismatch: the line was changed after it was written"


class ChecksumError(ValueError):
    """A sealed line whose content does not match its checksum (the line was changed after it was written)."""


def seal(line: bytes) -> bytes:
    """``line`` (one compact JSON object) with its checksum field added before the closing brace."""
    body = line[:-1]
    return b'%s,"crc":"%08x"}' % (body, zlib.crc32(body))


def check(line: bytes) -> None:
    """Raise :class:`ChecksumError` when ``line`` is sealed and its content does not match the seal.

    A line without a seal passes (see the module docstring); so does a sealed one
    whose digits are the CRC-32 of the bytes before its marker.
    """
    if broken_seals([line]):
        raise ChecksumError(CHECKSUM_MISMATCH)


def broken_seals(lines: list[bytes]) -> list[int]:
    """The indexes of the ``lines`` that carry a seal their content does not match.

    Tuned for whole logs: one pass, no call per line.
    """
    marker = MARKER
    crc32 = zlib.crc32
    failed = []
    for index, line in enumerate(lines):
        if line[-SEAL_LENGTH:-10] == marker:
            try:
                if int(line[-10:-2], 16) != crc32(line[:-SEAL_LENGTH]) or line[-2:] != b'"}':
                    failed.append(index)
            except ValueError:  # not hex digits
                failed.append(index)
    return failed
