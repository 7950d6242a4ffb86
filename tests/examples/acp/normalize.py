"""Normalizers that make a snapshot run comparable with its goldens (SPEC §16.5).

A run differs from the recorded one only in what the environment chose: the temp
workspace path, the session ids, the JSON-RPC ids the client picked, the clock. Both
normalizers take a :class:`ScrubContext` (the cwd and the session ids the client
learned) and rewrite every string recursively: the cwd becomes ``{{cwd}}``, each
known session id and then any other UUID becomes ``{{sessionId}}``. Output is
compact JSON, one value per line, with a trailing newline.

* :func:`normalize_stdout` -- every non-blank stdout line must be JSON (a line that is
  not raises :class:`StdoutPurityError`: stdout is the protocol); each frame's non-null
  ``id`` becomes its first-seen rank (1, 2, ...), so a request's response keeps the
  request's number and notifications stay without one.
* :func:`normalize_session_log` -- the header's ``createdAt`` and every other record's
  ``time`` become 0, the line checksum ``crc`` (dsh's own) is dropped; ``seq`` is kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

CWD_PLACEHOLDER = "{{cwd}}"
SESSION_PLACEHOLDER = "{{sessionId}}"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)


class StdoutPurityError(ValueError):
    """The server wrote something on stdout that is not a JSON-RPC frame."""


@dataclass(frozen=True)
class ScrubContext:
    """What a run chose: its workspace path and the session ids it was handed."""

    cwd: str | None = None
    session_ids: Sequence[str] = field(default_factory=tuple)


def scrub(value: Any, context: ScrubContext) -> Any:
    """``value`` with every string scrubbed (see the module docstring); keys are kept."""
    if isinstance(value, str):
        if context.cwd:
            value = value.replace(context.cwd, CWD_PLACEHOLDER)
        for session_id in context.session_ids:
            value = value.replace(session_id, SESSION_PLACEHOLDER)
        return UUID.sub(SESSION_PLACEHOLDER, value)
    if isinstance(value, list):
        return [scrub(item, context) for item in value]
    if isinstance(value, dict):
        return {key: scrub(item, context) for key, item in value.items()}
    return value


def dump(value: Any) -> str:
    """Compact JSON with UTF-8 text kept and key order kept."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _join(values: list[Any]) -> str:
    return "".join(dump(value) + "\n" for value in values)


def normalize_stdout(raw: str, context: ScrubContext) -> str:
    """The comparable form of a server's whole stdout; see the module docstring."""
    ranks: dict[str, int] = {}
    frames: list[Any] = []
    for number, line in enumerate(raw.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            frame = json.loads(line)
        except ValueError:
            raise StdoutPurityError(f"stdout line {number} is not a JSON-RPC frame: {line[:200]!r}") from None
        if isinstance(frame, dict) and frame.get("id") is not None:
            frame["id"] = ranks.setdefault(dump(frame["id"]), len(ranks) + 1)
        frames.append(scrub(frame, context))
    return _join(frames)


def normalize_session_log(raw: str, context: ScrubContext) -> str:
    """The comparable form of a JSONL session log; see the module docstring."""
    records: list[Any] = []
    for line in raw.split("\n"):
        if not line.strip():
            continue
        record = json.loads(line)
        record.pop("crc", None)  # dsh's own line checksum: the reference writes none
        if record.get("type") == "session":
            record["createdAt"] = 0
        elif "time" in record:
            record["time"] = 0
        records.append(scrub(record, context))
    return _join(records)


def json_lines(text: str) -> list[Any]:
    """The JSON values of ``text``'s non-blank lines (how goldens are compared)."""
    return [json.loads(line) for line in text.split("\n") if line.strip()]
