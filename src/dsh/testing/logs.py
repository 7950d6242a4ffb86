"""Reading a session log in tests: event types, and events or payloads as plain JSON.

The log holds typed, immutable events. A test about what was logged reads best
against the JSON it is written as, so these helpers give that form
(``dsh.core.llm.to_json``): ``assert data_json(session, "turn/end") == [{"turn": 1,
"reason": {"kind": "completed"}}]``. They accept a session or any sequence of
events, and build new plain values on each call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dsh.core.llm import to_json
from dsh.core.session import Session, SessionEvent


def _events(source: Session | Sequence[SessionEvent]) -> Sequence[SessionEvent]:
    return source.events if isinstance(source, Session) else source


def event_types(source: Session | Sequence[SessionEvent]) -> list[str]:
    """The ``type`` of every event, in log order."""
    return [event.type for event in _events(source)]


def log_json(source: Session | Sequence[SessionEvent], *, skip: Sequence[str] = ()) -> list[dict[str, Any]]:
    """Every event as its JSON object (``type, seq, time, data``), leaving out the types in ``skip``."""
    return [to_json(event) for event in _events(source) if event.type not in skip]


def data_json(source: Session | Sequence[SessionEvent], type: str) -> list[Any]:
    """The ``data`` of every event of ``type``, as JSON, in log order."""
    return [to_json(event)["data"] for event in _events(source) if event.type == type]
