"""JSONL log bytes with and without the line checksums the JSONL backend writes (see its ``checksum`` module)."""

from __future__ import annotations

from dsh.plugins.persistence_jsonl.checksum import MARKER, SEAL_LENGTH, seal


def unsealed_line(line: bytes) -> bytes:
    """``line`` without its checksum field (a line without one as it is)."""
    if line[-SEAL_LENGTH : -SEAL_LENGTH + len(MARKER)] == MARKER:
        return line[:-SEAL_LENGTH] + b"}"
    return line


def unsealed(data: bytes) -> bytes:
    """Every line of ``data`` (JSONL bytes) without its checksum field."""
    return b"\n".join(unsealed_line(line) for line in data.split(b"\n"))


def unsealed_text(text: str) -> str:
    """:func:`unsealed` for text."""
    return unsealed(text.encode()).decode()


def sealed(data: bytes) -> bytes:
    """Every complete line of ``data`` (JSONL bytes, each line ending in a newline) sealed as the backend writes it."""
    return b"".join(seal(line) + b"\n" for line in data.split(b"\n")[:-1])


__all__ = ["seal", "sealed", "unsealed", "unsealed_line", "unsealed_text"]
