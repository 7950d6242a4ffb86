"""SessionPersistenceJsonl: one append-only ``.jsonl`` file per session (SPEC §4b)."""

from __future__ import annotations

import builtins
import errno
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import cast

from pydantic import BaseModel, ConfigDict, Field

from dsh.core.persistence import (
    MISSING,
    BatchedOffload,
    CoordinatedPersistence,
    PersistenceError,
    StoredPrefix,
    WriterLocks,
    cwd_of,
    header_text,
    json_bytes,
    make_private_dirs,
)
from dsh.core.session import SessionEvent, SessionHeader
from dsh.kernel import ConfigPath, Context
from dsh.plugins.persistence_jsonl.checksum import seal
from dsh.plugins.persistence_jsonl.files import (
    append_durably,
    exists,
    fsync_dir,
    publish_new_file,
    read_first_line,
    read_if_exists,
    remove_durably,
    sync_file,
    truncate_durably,
)
from dsh.plugins.persistence_jsonl.layout import LOCKS_DIR, LOG_SUFFIX, encode_segment, log_path
from dsh.plugins.persistence_jsonl.scan import intact_bytes, parse_header_line, scan_log


class JsonlConfig(BaseModel):
    """``root``: the directory holding the session logs (required; a :data:`~dsh.kernel.ConfigPath`:
    ``~`` and ``$NAME`` expanded, relative to the tree file; made absolute once).

    ``syncIntervalMs``: when set, a checkpoint (the write of each finished step) also
    fsyncs the log once that many milliseconds have passed since the log's last fsync,
    bounding what a power loss can take in a long turn; unset, logs are fsynced at the
    end of each turn only (a crash of dsh alone loses nothing written either way).
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    root: ConfigPath = Field(min_length=1)
    sync_interval_ms: int | None = Field(default=None, ge=0, alias="syncIntervalMs")


def _encode_lines(lines: Sequence[bytes]) -> bytes:
    """``lines`` (storage JSON, at least one), each ending in a newline."""
    return b"\n".join(lines) + b"\n"


def _event_lines(events: Iterable[SessionEvent]) -> builtins.list[bytes]:
    """The sealed JSONL line of each event as UTF-8: each event encoded once, here, straight to bytes."""
    return [seal(json_bytes(event)) for event in events]


class SessionPersistenceJsonl(CoordinatedPersistence):
    """The JSONL ``session_persistence`` plugin (``root`` config, ``inject = ["sessions"]``).

    Layout and line format: :mod:`dsh.plugins.persistence_jsonl.layout` and SPEC §4b.
    Files appear on the first non-empty append (lazy materialization), atomically; an
    append writes one batch with one write and one fsync (a checkpoint's write skips
    the fsync, which the turn's flush does) and is rolled back by truncation if it
    fails. A directory's entry is fsynced when this backend creates the directory, and
    once per backend instance for the root and each bucket it writes into (covering a
    directory another writer created but crashed before syncing).

    One writer per session: loading, adopting or creating a session first takes its
    writer lock, an ``flock`` on ``<root>/.locks/<hash of the id>.lock`` held until the
    session is retired (``session/disposed``) or the backend closes (or the process
    ends); a session another process holds is refused with ``SESSION_LOCKED`` naming
    that process's pid. The lock is keyed by id alone, not by the cwd bucket, because
    an id names one session across every bucket. The lock files have a directory of
    their own: one stays for every session ever written, and finding a session lists
    the root.

    Every hook runs its blocking file I/O in the event loop's default executor (except a
    checkpoint's write to an existing log: one unsynced ``write``, done on the loop, where
    it cannot be cancelled halfway); a read scans the log there too, while a write encodes
    its lines on the loop first (small work that would only contend for the GIL in a
    thread). The work goes through a :class:`~dsh.core.persistence.BatchedOffload` with at
    most four batches out at once: other sessions keep running while one session's fsync
    stalls, and when many sessions write at once (a thousand turns ending together) their
    file work reaches the threads in a few batches rather than one hop each. The
    coordinator runs one hook at a time per session id; a hook whose caller is cancelled
    still finishes its file work, so a batch of events is never left half written.
    OS failures are raised as :class:`~dsh.core.persistence.PersistenceError` (code
    ``STORAGE_IO``, the ``OSError`` as ``__cause__``). A log that is a symbolic link is
    never read, appended to or truncated (``SYMLINKED_LOG``): every log is opened with
    ``O_NOFOLLOW``.
    """

    name = "session-persistence-jsonl"
    inject = ("sessions",)
    Config = JsonlConfig

    def __init__(self, ctx: Context, config: JsonlConfig) -> None:
        self.root = os.path.abspath(config.root)
        self._sync_interval = None if config.sync_interval_ms is None else config.sync_interval_ms / 1000
        self._last_sync: dict[str, float] = {}
        self._synced_buckets: set[str] = set()
        self.locks = WriterLocks(os.path.join(self.root, LOCKS_DIR))
        self._offload = BatchedOffload()
        super().__init__(ctx)

    @contextmanager
    def _storage(self, action: str) -> Iterator[None]:
        try:
            yield
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise PersistenceError(
                    f"{action} refused: {error.filename} is a symbolic link and dsh never follows one "
                    "(replace the link with the log file itself)",
                    "SYMLINKED_LOG",
                    error,
                ) from error
            raise PersistenceError(
                f"{action} failed: {error} (check that {self.root} is a writable directory on a disk with free space)",
                "STORAGE_IO",
                error,
            ) from error

    def _buckets(self) -> builtins.list[str]:
        """The bucket directories under the root, sorted; none when the root does not exist."""
        try:
            with os.scandir(self.root) as entries:
                return sorted(entry.path for entry in entries if entry.is_dir() and entry.name != LOCKS_DIR)
        except FileNotFoundError:
            return []

    def _find(self, id: str) -> str | None:
        name = encode_segment(id) + LOG_SUFFIX
        for bucket in self._buckets():
            path = os.path.join(bucket, name)
            if exists(path):
                return path
        return None

    @staticmethod
    def _prefix(path: str | None, data: bytes | None) -> StoredPrefix | None:
        if path is None or data is None:
            return None
        scan = scan_log(data, path)
        marker = scan.committed_bytes if scan.committed_bytes < len(data) else MISSING
        return StoredPrefix(scan.meta, scan.events, marker)

    # ------------------------------------------------------------------ blocking work
    def _read_stored(self, id: str) -> StoredPrefix | None:
        with self._storage(f'reading session "{id}"'):
            path = self._find(id)
            data = None if path is None else read_if_exists(path)
        return self._prefix(path, data)

    def _mark(self, id: str) -> object:
        path = self._find(id)
        try:
            stat = os.stat(path) if path is not None else None
        except FileNotFoundError:  # removed between the lookup and the stat
            stat = None
        return None if stat is None else (stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def _read_live(self, id: str, cwd: str | None) -> StoredPrefix | None:
        path = log_path(self.root, cwd, id)
        with self._storage(f'reading session "{id}"'):
            data = read_if_exists(path)
        return self._prefix(path, data)

    def _write_batch(self, id: str, path: str, data: bytes, materialized: bool, sync: bool = True) -> None:
        with self._storage(f'writing session "{id}"'):
            if materialized:
                append_durably(path, data, sync=sync)
            else:
                self._materialize(id, path, data)

    def _sync(self, id: str, path: str) -> None:
        with self._storage(f'syncing session "{id}"'):
            sync_file(path)

    def _materialize(self, id: str, path: str, data: bytes) -> None:
        """Publish a new log; its bucket is prepared once per instance (no ``mkdir`` per new log)."""
        bucket = os.path.dirname(path)
        if bucket not in self._synced_buckets:
            self._prepare_bucket(bucket)
        if exists(path):
            raise PersistenceError(
                f'refusing to materialize "{id}": a log already exists on disk (load/resume it instead)',
                "SESSION_EXISTS",
            )
        try:
            publish_new_file(path, data)
        except FileNotFoundError:  # the bucket was removed since it was prepared: make it again
            self._synced_buckets.discard(bucket)
            self._prepare_bucket(bucket)
            publish_new_file(path, data)

    def _prepare_bucket(self, bucket: str) -> None:
        """Make ``bucket`` (and the root) exist and their directory entries durable; once per bucket and instance."""
        created = make_private_dirs(bucket)
        unsynced = {os.path.dirname(directory) for directory in created}
        unsynced.update((os.path.dirname(self.root), self.root))
        for directory in sorted(unsynced):
            fsync_dir(directory)
        self._synced_buckets.add(bucket)

    def _repair(self, id: str, path: str, torn_marker: object, closers: bytes) -> None:
        with self._storage(f'repairing session "{id}"'):
            if torn_marker is not MISSING:
                truncate_durably(path, cast(int, torn_marker))
                self.own_ctx.logger.warn(
                    "%s: removed a torn tail (an unfinished write) after byte %d", path, cast(int, torn_marker)
                )
            if closers:
                append_durably(path, closers)

    def _delete(self, id: str) -> None:
        with self._storage(f'deleting session "{id}"'):
            path = self._find(id)
            if path is not None:
                remove_durably(path)

    def _headers(self) -> builtins.list[SessionHeader]:
        headers: builtins.list[SessionHeader] = []
        with self._storage("listing sessions"):
            for bucket in self._buckets():
                with os.scandir(bucket) as entries:
                    paths = sorted(
                        entry.path
                        for entry in entries
                        if entry.name.endswith(LOG_SUFFIX) and entry.is_file(follow_symlinks=False)
                    )
                for path in paths:
                    line = read_first_line(path)
                    if line is None:
                        continue
                    try:
                        headers.append(parse_header_line(line))
                    except PersistenceError:
                        continue
        return headers

    def unlisted_logs(self, headers: Iterable[SessionHeader]) -> builtins.list[str]:
        """The ``.jsonl`` entries under the root that :meth:`list` skips (no valid header, a symlink), sorted.

        ``headers`` are what :meth:`list` returned. Blocking (a directory scan).
        """
        listed = {log_path(self.root, cwd_of(header), header.id) for header in headers}
        with self._storage("listing sessions"):
            found = [
                entry.path
                for bucket in self._buckets()
                for entry in os.scandir(bucket)
                if entry.name.endswith(LOG_SUFFIX)
            ]
        return sorted(path for path in found if path not in listed)

    def _cut_damage(self, id: str) -> tuple[str, str, int] | None:
        path = self._find(id)
        if path is None:
            raise PersistenceError(f'session "{id}" not found', "SESSION_NOT_FOUND")
        data = read_if_exists(path) or b""
        keep = intact_bytes(data)
        if keep == len(data):
            return None
        backup = f"{path}.bak-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        publish_new_file(backup, data)
        truncate_durably(path, keep)
        return path, backup, len(data) - keep

    async def cut_damage(self, id: str) -> tuple[str, str, int] | None:
        """Cut the log of ``id`` back to its intact start, after saving a copy of the whole file.

        Takes the writer lock first, so a session another process writes is refused
        (``SESSION_LOCKED``). Returns ``(log path, copy path, bytes cut)``, or None when
        the log is intact. Never follows a symlinked log (``SYMLINKED_LOG``); a bad
        header is refused (``CORRUPT_LOG``: there is nothing to keep).
        """
        await self.lock_writer(id)
        with self._storage(f'repairing session "{id}"'):
            return await self._offload.run(partial(self._cut_damage, id))

    # ------------------------------------------------------------------ storage hooks
    async def load_stored(self, id: str) -> StoredPrefix | None:
        return await self._offload.run(partial(self._read_stored, id))

    async def load_live(self, id: str, cwd: str | None) -> StoredPrefix | None:
        return await self._offload.run(partial(self._read_live, id, cwd))

    async def change_mark(self, id: str) -> object:
        """The log file's identity, size and modification time (None when there is no file): a stat, no read."""
        return await self._offload.run(partial(self._mark, id))

    async def append_batch(self, meta: SessionHeader, events: Sequence[SessionEvent], materialized: bool) -> None:
        await self._append(meta, events, materialized, sync=True)
        self._synced(meta.id)

    def _synced(self, id: str) -> None:
        if self._sync_interval is not None:
            self._last_sync[id] = time.monotonic()

    def _sync_due(self, id: str) -> bool:
        """Whether a checkpoint of ``id`` should fsync now (``syncIntervalMs`` passed since its last fsync)."""
        interval = self._sync_interval
        if interval is None:
            return False
        last = self._last_sync.setdefault(id, time.monotonic())
        return time.monotonic() - last >= interval

    async def write_batch(self, meta: SessionHeader, events: Sequence[SessionEvent], materialized: bool) -> None:
        """Append without the fsync; a new log is still published whole and synced (in the executor).

        The write to an existing log runs on the event loop: one ``write`` into the OS's
        cache, cheaper than the hop to a worker thread. When ``syncIntervalMs`` has
        passed since the log's last fsync, the append is fsynced, in the executor.
        """
        if materialized and self.write_batch_now(meta, events):
            return
        await self._append(meta, events, materialized, sync=materialized)
        self._synced(meta.id)

    def write_batch_now(self, meta: SessionHeader, events: Sequence[SessionEvent]) -> bool:
        """The write of :meth:`write_batch` to an existing log, on the loop; declined when an fsync is due."""
        id = meta.id
        if self._sync_due(id):
            return False
        data = _encode_lines(_event_lines(events))
        self._write_batch(id, log_path(self.root, cwd_of(meta), id), data, True, sync=False)
        return True

    async def sync_log(self, meta: SessionHeader) -> None:
        id = meta.id
        await self._offload.run(partial(self._sync, id, log_path(self.root, cwd_of(meta), id)))
        self._synced(id)

    async def _append(
        self, meta: SessionHeader, events: Sequence[SessionEvent], materialized: bool, sync: bool
    ) -> None:
        id = meta.id
        path = log_path(self.root, cwd_of(meta), id)
        lines = _event_lines(events)
        if not materialized:
            lines.insert(0, seal(header_text(meta).encode()))
        await self._offload.run(partial(self._write_batch, id, path, _encode_lines(lines), materialized, sync))

    async def commit_repair(self, meta: SessionHeader, torn_marker: object, closers: Sequence[SessionEvent]) -> None:
        id = meta.id
        path = log_path(self.root, cwd_of(meta), id)
        data = _encode_lines(_event_lines(closers)) if closers else b""
        await self._offload.run(partial(self._repair, id, path, torn_marker, data))

    async def delete_stored(self, id: str) -> None:
        await self._offload.run(partial(self._delete, id))

    async def lock_writer(self, id: str) -> None:
        """Hold ``<root>/.locks/<hash of the id>.lock`` (see :class:`~dsh.core.persistence.WriterLocks`).

        The directories the lock creates (the root and ``.locks``, the first time) have
        their entries fsynced; once they exist a lock costs no ``mkdir``.
        """
        created = self.locks.acquire(id)
        try:
            with self._storage(f'locking session "{id}"'):
                for directory in created:
                    fsync_dir(os.path.dirname(directory))
        except PersistenceError:
            self.locks.release(id)  # a failed lock is not kept (the first publish syncs the root again)
            raise

    async def release_writer(self, id: str) -> None:
        """Let go of the lock of ``id`` and forget when its log was last synced."""
        self.locks.release(id)
        self._last_sync.pop(id, None)

    async def close(self) -> None:
        """Release the writer locks this backend holds."""
        self.locks.close()

    async def list(self) -> builtins.list[SessionHeader]:
        return await self._offload.run(self._headers)
