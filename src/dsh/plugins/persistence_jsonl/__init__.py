"""The append-only JSONL session backend (SPEC §4b): one ``.jsonl`` file per session.

Load :class:`SessionPersistenceJsonl` with ``{"root": "<dir>"}``; it registers as
``session_persistence`` and needs ``sessions``. The helpers below are the on-disk
format, exposed for tools and tests.
"""

from dsh.plugins.persistence_jsonl.layout import LOCKS_DIR, NO_CWD_BUCKET, bucket_name, encode_segment, log_path
from dsh.plugins.persistence_jsonl.plugin import JsonlConfig, SessionPersistenceJsonl
from dsh.plugins.persistence_jsonl.scan import LogScan, parse_header_line, scan_log

__all__ = [
    "LOCKS_DIR",
    "NO_CWD_BUCKET",
    "JsonlConfig",
    "LogScan",
    "SessionPersistenceJsonl",
    "bucket_name",
    "encode_segment",
    "log_path",
    "parse_header_line",
    "scan_log",
]
