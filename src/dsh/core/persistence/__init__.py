"""Durable sessions: the ``session_persistence`` seam and the shared write coordinator (SPEC §4).

* :class:`SessionPersistence` (key :data:`SESSION_PERSISTENCE`): what a durable
  backend offers (create / append / load / list / has / delete);
* :class:`PersistenceBackend`: the storage hooks a backend implements;
* :class:`PersistenceCoordinator`: the orchestration every backend shares (adoption of
  live sessions, write-behind buffers, flush, per-id ordering, dispose drain);
* :class:`CoordinatedPersistence`: hooks + coordinator = the service;
* :class:`MemoryPersistence`: the in-memory backend plugin;
* helpers for storage backends: :func:`run_blocking` and :class:`BatchedOffload` (blocking I/O off
  the event loop, one piece at a time or in batches),
  :class:`WriterLocks` (one writer per session across processes),
  :func:`make_private_dirs` (0700 directories, safe against concurrent creators),
  :func:`poll_log` (the polling live tail behind ``follow``),
  the storage text of events and headers (:func:`event_text`, :func:`data_text`,
  :func:`header_text`: lone surrogates written as escapes) and the bulk read-back of
  :mod:`~dsh.core.persistence.readback`.
"""

from dsh.core.persistence.backend import MISSING, PersistenceBackend, StoredPrefix
from dsh.core.persistence.coordinated import CoordinatedPersistence
from dsh.core.persistence.coordinator import EARLY_WRITE, PersistenceCoordinator, cwd_of, early_write_phase
from dsh.core.persistence.dirs import make_private_dirs, unwritable_dir
from dsh.core.persistence.errors import PersistenceError
from dsh.core.persistence.follow import POLL_INTERVAL_S, continuing, not_stored, poll_log
from dsh.core.persistence.jsontext import (
    data_text,
    escape_lone_surrogates,
    event_text,
    header_text,
    json_bytes,
    json_text,
)
from dsh.core.persistence.locks import WriterLocks
from dsh.core.persistence.memory import MemoryConfig, MemoryPersistence, MemoryStorage
from dsh.core.persistence.offload import BatchedOffload, run_blocking
from dsh.core.persistence.readback import (
    loads_stored_json,
    parse_event_lines,
    parse_event_rows,
    paused_gc,
    torn_tail,
)
from dsh.core.persistence.service import SESSION_PERSISTENCE, LoadedSession, SessionPersistence
from dsh.core.persistence.validation import assert_serializable, seed_covers_prefix
from dsh.core.session import SessionHeader

__all__ = [
    "EARLY_WRITE",
    "MISSING",
    "POLL_INTERVAL_S",
    "SESSION_PERSISTENCE",
    "BatchedOffload",
    "CoordinatedPersistence",
    "LoadedSession",
    "MemoryConfig",
    "MemoryPersistence",
    "MemoryStorage",
    "PersistenceBackend",
    "PersistenceCoordinator",
    "PersistenceError",
    "SessionHeader",
    "SessionPersistence",
    "StoredPrefix",
    "WriterLocks",
    "assert_serializable",
    "continuing",
    "cwd_of",
    "data_text",
    "early_write_phase",
    "escape_lone_surrogates",
    "event_text",
    "header_text",
    "json_bytes",
    "json_text",
    "loads_stored_json",
    "make_private_dirs",
    "not_stored",
    "parse_event_lines",
    "parse_event_rows",
    "paused_gc",
    "poll_log",
    "run_blocking",
    "seed_covers_prefix",
    "torn_tail",
    "unwritable_dir",
]
