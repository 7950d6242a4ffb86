"""Where a session log lives under the JSONL root (SPEC §4b, on-disk format).

::

    <root>/
      cwd-<first 12 hex of sha256(utf8(cwd))>/   one bucket per session cwd
      _no-cwd/                                 sessions without a cwd
        <encode_segment(id)>.jsonl
      .locks/                                  the writer locks, one file a session id
        <first 24 hex of sha256(utf8(id))>.lock
"""

from __future__ import annotations

import functools
import hashlib
import os

from dsh.core.persistence import PersistenceError

NO_CWD_BUCKET = "_no-cwd"
LOCKS_DIR = ".locks"
"""The directory of the writer lock files under the root (never a bucket: buckets are ``cwd-*`` and ``_no-cwd``)."""
LOG_SUFFIX = ".jsonl"

_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def encode_segment(raw: str) -> str:
    """Encode ``raw`` as one safe path segment, injectively.

    Each UTF-16 code unit outside ``[A-Za-z0-9._-]`` becomes ``~`` plus its four
    upper-case hex digits (``/`` → ``~002F``, ``~`` → ``~007E``, a lone ``\\ud800`` →
    ``~D800``); ``.`` and ``..`` are escaped whole. The result never contains a path
    separator and is never ``.``/``..``. Raises :class:`PersistenceError` for ``""``.
    """
    if raw == "":
        raise PersistenceError("cannot encode an empty path segment", "INVALID_ID")
    if raw == ".":
        return "~002E"
    if raw == "..":
        return "~002E~002E"
    units = raw.encode("utf-16-be", "surrogatepass")
    parts: list[str] = []
    for index in range(0, len(units), 2):
        unit = units[index] << 8 | units[index + 1]
        char = chr(unit)
        parts.append(char if char in _SAFE else f"~{unit:04X}")
    return "".join(parts)


def _utf8(text: str) -> bytes:
    """UTF-8 of ``text``, a lone surrogate becoming U+FFFD (as JavaScript encodes it)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-be", "surrogatepass").decode("utf-16-be", "replace").encode("utf-8")


def bucket_name(cwd: str | None) -> str:
    """The bucket directory of sessions with ``cwd`` (``_no-cwd`` when None)."""
    if cwd is None:
        return NO_CWD_BUCKET
    return "cwd-" + hashlib.sha256(_utf8(cwd)).hexdigest()[:12]


@functools.lru_cache(maxsize=1024)
def log_path(root: str, cwd: str | None, id: str) -> str:
    """The log file of session ``id`` with ``cwd`` under ``root`` (memoized: every write asks for it)."""
    return os.path.join(root, bucket_name(cwd), encode_segment(id) + LOG_SUFFIX)
