"""Telling text from binary and reading line windows without holding the whole file.

Pure helpers over open binary files. A file is binary when its first
:data:`SNIFF_BYTES` bytes hold a NUL byte; its type is named from well-known magic
numbers, else from its extension, else ``binary data``.
"""

from __future__ import annotations

import codecs
import io
import mimetypes
from typing import BinaryIO

from dsh.core.fs import FsError, Newline

SNIFF_BYTES = 8192
"""How much of a file's head decides whether it is binary and which newline it uses."""

CHUNK_BYTES = 1 << 16
"""The most of one line read at once: a longer line is streamed, only its kept part decoded."""

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "ZIP archive"),
    (b"\x1f\x8b", "gzip archive"),
    (b"\x7fELF", "ELF executable"),
    (b"SQLite format 3\x00", "SQLite database"),
)


def binary_kind(head: bytes, path: str) -> str | None:
    """What kind of binary file starts with ``head`` (None: it looks like text)."""
    if b"\x00" not in head[:SNIFF_BYTES]:
        return None
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    guessed, _ = mimetypes.guess_type(path)
    return guessed or "binary data"


def detect_newline(head: bytes) -> Newline:
    """``"\\r\\n"`` when the first line ending in ``head`` is CRLF, else ``"\\n"``."""
    index = head.find(b"\n")
    return "\r\n" if index > 0 and head[index - 1 : index] == b"\r" else "\n"


def refuse_binary(path: str, size: int, kind: str) -> FsError:
    return FsError(
        f"{path} is a binary file ({kind}, {size:,} bytes): the file tools read and write UTF-8 text only; "
        "inspect it with bash (e.g. `file` or `xxd | head`)",
        "BINARY",
        path,
    )


def refuse_undecodable(path: str, size: int, line: int, error: UnicodeDecodeError) -> FsError:
    byte = error.object[error.start : error.start + 1].hex()
    return FsError(
        f"{path} is not UTF-8 text (byte 0x{byte} on line {line} does not decode; {size:,} bytes): the file "
        "tools handle UTF-8 only; convert it (e.g. `iconv -f latin1 -t utf-8`) or work on it with bash",
        "NOT_UTF8",
        path,
    )


def decode_text(data: bytes, path: str) -> str:
    """``data`` as UTF-8, or ``FsError`` ``NOT_UTF8`` naming the first bad line."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise refuse_undecodable(path, len(data), line, error) from error


def read_lines(
    file: BinaryIO, path: str, size: int, offset: int, limit: int, max_chars: int, *, first_line: int = 1
) -> tuple[tuple[str, ...], int, tuple[int, ...]]:
    """Stream ``file`` (positioned at its start): the decoded lines in the window, the
    total line count and the numbers of the window lines cut to ``max_chars``.
    ``first_line`` is the number of the stream's first line (the count includes those before).

    Lines outside the window are only counted; a window line is decoded up to
    ``max_chars`` characters, the rest of it skipped unread into memory.
    """
    lines: list[str] = []
    cut: list[int] = []
    number = first_line - 1
    last = offset + limit - 1
    while True:
        chunk = file.readline(CHUNK_BYTES)
        if not chunk:
            return tuple(lines), number, tuple(cut)
        number += 1
        if not offset <= number <= last:
            while not chunk.endswith(b"\n"):
                chunk = file.readline(CHUNK_BYTES)
                if not chunk:
                    break
            continue
        decoder = codecs.getincrementaldecoder("utf-8")()
        kept = ""
        whole = True
        while True:
            ended = chunk.endswith(b"\n")
            body = chunk[:-1] if ended else chunk
            if len(kept) <= max_chars:
                try:
                    kept += decoder.decode(body, final=ended)
                except UnicodeDecodeError as error:
                    raise refuse_undecodable(path, size, number, error) from error
            else:
                whole = False
            if ended:
                break
            chunk = file.readline(CHUNK_BYTES)
            if not chunk:
                if whole:
                    try:
                        kept += decoder.decode(b"", final=True)
                    except UnicodeDecodeError as error:
                        raise refuse_undecodable(path, size, number, error) from error
                break
        kept = kept.removesuffix("\r")
        if not whole or len(kept) > max_chars:
            kept = kept[:max_chars]
            cut.append(number)
        lines.append(kept)


def window_lines(
    data: bytes, path: str, offset: int, limit: int, max_chars: int
) -> tuple[tuple[str, ...], int, tuple[int, ...]]:
    """:func:`read_lines` over a file already in memory (``data``, all of it), with the same result.

    Lines are split and counted by bytes; only the window's lines are decoded. A window
    line longer than ``max_chars`` bytes may be cut: it goes through :func:`read_lines`,
    so cutting and decoding errors stay exactly the streaming ones.
    """
    raw_lines = data.split(b"\n")
    if raw_lines[-1] == b"":
        raw_lines.pop()  # a final newline ends the last line; it does not start another
    lines: list[str] = []
    cut: list[int] = []
    for number, raw in enumerate(raw_lines[offset - 1 : offset - 1 + limit], offset):
        if len(raw) > max_chars:
            (line,), _, was_cut = read_lines(io.BytesIO(raw), path, len(data), number, 1, max_chars, first_line=number)
            if was_cut:
                cut.append(number)
            lines.append(line)
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise refuse_undecodable(path, len(data), number, error) from error
        lines.append(line.removesuffix("\r"))
    return tuple(lines), len(raw_lines), tuple(cut)
