"""Durable file primitives for append-only logs (blocking ``os`` calls).

* :func:`publish_new_file` makes a file appear whole or not at all: the bytes go to an
  exclusive temp file (mode 0600), are fsynced, then hard-linked to the final name
  (which fails if it exists: never a rename over an existing log), and the directory
  is fsynced.
* :func:`append_durably` writes one batch with one ``write`` and one ``fsync`` (or
  without the ``fsync``, left to a later :func:`sync_file`); if either fails it
  truncates the file back to its size before the batch, so a retry never duplicates a
  line.

Every function raises ``OSError`` as the OS reports it; callers translate. No
function follows a symbolic link at the log's own path (``O_NOFOLLOW``: ``ELOOP``).
"""

from __future__ import annotations

import contextlib
import os
import secrets

FILE_MODE = 0o600
READ_CHUNK = 8192


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def fsync_dir(path: str) -> None:
    """Make the entries of directory ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def exists(path: str) -> bool:
    """True when ``path`` exists; only ENOENT counts as absent (ENOTDIR and others raise)."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return False
    return True


def read_if_exists(path: str) -> bytes | None:
    """The whole content of ``path``, or None when it does not exist (ENOENT only).

    A symbolic link at ``path`` is not followed (``OSError`` ``ELOOP``).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    with open(fd, "rb", closefd=True) as file:
        return file.read()


def read_first_line(path: str) -> bytes | None:
    """The first line of ``path`` without its newline, or None when there is no complete line.

    Reads 8 KiB chunks until a newline appears, never the whole file.
    """
    chunks: list[bytes] = []
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    with open(fd, "rb", buffering=0, closefd=True) as file:
        while chunk := file.read(READ_CHUNK):
            end = chunk.find(b"\n")
            if end >= 0:
                chunks.append(chunk[:end])
                return b"".join(chunks)
            chunks.append(chunk)
    return None


def publish_new_file(path: str, data: bytes) -> None:
    """Create ``path`` holding exactly ``data``, atomically and durably (see the module docstring).

    Raises ``FileExistsError`` if ``path`` exists. No temp file is left behind on
    failure (best effort after success: a stray ``*.tmp`` is harmless).
    """
    temp = f"{path}.{secrets.token_hex(6)}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    fsync_dir(os.path.dirname(path))
    with contextlib.suppress(OSError):
        os.unlink(temp)


def append_durably(path: str, data: bytes, *, sync: bool = True) -> None:
    """Append ``data`` to the existing file ``path``; returns once it is on disk.

    With ``sync=False`` it returns once the bytes are written (in the OS's cache: they
    survive this process, not a crash of the machine, until :func:`sync_file`).
    On failure the file is truncated back to its previous size (and fsynced) before
    the error propagates; if that rollback fails too, a note on the error says so.
    """
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        size = os.fstat(fd).st_size
        try:
            _write_all(fd, data)
            if sync:
                os.fsync(fd)
        except BaseException as error:
            try:
                os.ftruncate(fd, size)
                os.fsync(fd)
            except OSError as rollback:
                error.add_note(f"truncating {path} back to {size} bytes failed too: {rollback}")
            raise
    finally:
        os.close(fd)


def sync_file(path: str) -> None:
    """Make every byte written to ``path`` durable (its fsync)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def truncate_durably(path: str, size: int) -> None:
    """Cut ``path`` to ``size`` bytes and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        os.ftruncate(fd, size)
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_durably(path: str) -> None:
    """Unlink ``path`` and fsync its directory."""
    os.unlink(path)
    fsync_dir(os.path.dirname(path))
