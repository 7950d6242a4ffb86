"""Bounded output capture with a spill file (SPEC §9b ``OutputCollector``).

A command may print gigabytes; only the last ``max_bytes`` stay in memory. Once the
stream outgrows the cap, everything (what was retained so far, then every new chunk)
is also written to a private spill file, so the complete stream stays readable on
disk while memory stays bounded. A spill file may be capped (``max_spill_bytes``): it
then holds the first bytes of the stream only, and says so (``spill_truncated``).
Bytes are decoded as UTF-8 with replacement: bad or cut sequences become U+FFFD,
decoding never raises.
"""

from __future__ import annotations

import atexit
import codecs
import contextlib
import itertools
import os
import secrets
import shutil
import tempfile
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

from dsh.core.bash import CollectedOutput

_spill_counter = itertools.count(1)
"""One counter for every collector of the process, so spill names never repeat."""

_private_dir: str | None = None


def default_spill_dir() -> str:
    """This process's private spill directory (mode 0700), created on first use and
    removed when the interpreter exits (executors use a directory of their own)."""
    global _private_dir
    if _private_dir is None:
        _private_dir = tempfile.mkdtemp(prefix="dsh-bash-")
        atexit.register(shutil.rmtree, _private_dir, ignore_errors=True)
    return _private_dir


def _owner_only(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)


@dataclass(frozen=True)
class CollectorRead:
    """An incremental read: ``text`` from the requested offset up to ``next_offset``.

    ``lossy`` is True when bytes before the retained window were asked for (they are
    gone from memory; ``text`` is then the whole retained tail). Offsets count bytes
    of the whole stream.
    """

    text: str
    next_offset: int
    lossy: bool
    spill_path: str | None = None


class OutputCollector:
    """Keeps the tail of one output stream in memory and spills the whole stream.

    ``label`` ends the spill file name (``dsh-bash-<pid>-<n>-<12 hex>-<label>.log``);
    ``spill_dir`` defaults to :func:`default_spill_dir` (a missing one is created, mode
    0700, when the first spill needs it); ``max_spill_bytes`` (None: unbounded) caps the
    spill file's size; ``on_chunk`` (optional) is called with each pushed chunk, after it
    is stored (a raise propagates to the pusher). The collector owns its spill
    file: :meth:`finalize` closes it. A spill file that cannot be created, written or
    closed is abandoned and its path never advertised (an incomplete file must not be
    offered as "the full output"); the in-memory tail is unaffected.
    """

    def __init__(
        self,
        max_bytes: int,
        label: str,
        spill_dir: str | None = None,
        max_spill_bytes: int | None = None,
        on_chunk: Callable[[bytes], object] | None = None,
    ) -> None:
        if max_bytes <= 0:
            raise ValueError(f"OutputCollector: max_bytes must be positive, got {max_bytes}")
        self._max = max_bytes
        self._label = label
        self._spill_dir = spill_dir
        self._chunks: deque[bytes] = deque()
        self._retained = 0
        self._total = 0
        self._dropped = False
        self._file: BinaryIO | None = None
        self._spill_path: str | None = None
        self._spill_failed = False
        self._finalized = False
        self._spill_cap = max_spill_bytes
        self._spilled = 0
        self._spill_truncated = False
        self._on_chunk = on_chunk

    @property
    def total_bytes(self) -> int:
        """Bytes seen so far, dropped ones included."""
        return self._total

    @property
    def retained_bytes(self) -> int:
        """Bytes held in memory; never more than ``max_bytes`` between calls."""
        return self._retained

    @property
    def spill_path(self) -> str | None:
        """The spill file holding the complete stream, when there is a trustworthy one."""
        return self._spill_path

    def push(self, chunk: bytes) -> None:
        """Append ``chunk`` to the stream."""
        if not chunk:
            return
        self._total += len(chunk)
        if self._file is None and not self._spill_failed and self._retained + len(chunk) > self._max:
            self._open_spill()
        if self._file is not None:
            self._write(self._file, chunk)
        self._chunks.append(chunk)
        self._retained += len(chunk)
        while self._retained > self._max and len(self._chunks) > 1:
            self._retained -= len(self._chunks.popleft())
            self._dropped = True
        if self._retained > self._max:
            self._chunks[0] = self._chunks[0][-self._max :]
            self._retained = self._max
            self._dropped = True
        if self._on_chunk is not None:
            self._on_chunk(chunk)

    def snapshot(self) -> CollectedOutput:
        """The retained text (the tail when truncated) and the spill path, if any."""
        text = b"".join(self._chunks).decode("utf-8", "replace")
        return CollectedOutput(
            text=text,
            truncated=self._dropped,
            spill_path=self._spill_path,
            spill_truncated=self._spill_truncated and self._spill_path is not None,
        )

    def read_from(self, from_byte: int) -> CollectorRead:
        """The text from byte ``from_byte`` of the stream to its current end.

        While the stream is open, a trailing incomplete UTF-8 sequence is held back
        (``next_offset`` stops before it) so a character split across reads arrives
        whole; after :meth:`finalize` everything is delivered. A spill file is flushed
        first, so the advertised path holds every byte read so far.
        """
        window_start = self._total - self._retained
        lossy = from_byte < window_start
        data = b"".join(self._chunks)
        if not lossy:
            data = data[from_byte - window_start :]
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        text = decoder.decode(data, final=self._finalized)
        held = len(decoder.getstate()[0])
        if self._file is not None:
            try:
                self._file.flush()
            except OSError:
                self._abandon_spill(self._file)
        return CollectorRead(text=text, next_offset=self._total - held, lossy=lossy, spill_path=self._spill_path)

    def finalize(self) -> CollectedOutput:
        """Close the spill file and return :meth:`snapshot`; idempotent, never raises.

        If closing fails, the spill path is withheld from then on.
        """
        self._finalized = True
        file, self._file = self._file, None
        if file is not None:
            try:
                file.close()
            except OSError:
                self._spill_path = None
                self._spill_failed = True
        return self.snapshot()

    # ------------------------------------------------------------------ spill
    def _open_spill(self) -> None:
        try:
            directory = self._spill_dir if self._spill_dir is not None else default_spill_dir()
            os.makedirs(directory, 0o700, exist_ok=True)
            name = f"dsh-bash-{os.getpid()}-{next(_spill_counter)}-{secrets.token_hex(6)}-{self._label}.log"
            path = os.path.join(directory, name)
            self._file = open(path, "xb", opener=_owner_only)  # noqa: SIM115 - closed by finalize
        except OSError:
            self._spill_failed = True
            return
        self._spill_path = path
        self._write(self._file, b"".join(self._chunks))

    def _write(self, file: BinaryIO, data: bytes) -> None:
        if self._spill_cap is not None:
            room = self._spill_cap - self._spilled
            if len(data) > room:
                self._spill_truncated = True
                data = data[: max(room, 0)]
            self._spilled += len(data)
        try:
            file.write(data)
        except OSError:
            self._abandon_spill(file)

    def _abandon_spill(self, file: BinaryIO) -> None:
        path = self._spill_path
        self._file = None
        self._spill_path = None
        self._spill_failed = True
        assert path is not None  # a file is only ever open with its path recorded
        with contextlib.suppress(OSError):
            file.close()
        with contextlib.suppress(OSError):
            os.unlink(path)
