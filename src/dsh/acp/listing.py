"""ACP ``session/list``: the stored and live sessions, newest first, cwd-filtered, paged.

A page holds at most :data:`PAGE_SIZE` sessions; ``nextCursor`` (present only when
more follow) is opaque to the client: it names the last session of the page, so a
session stored meanwhile never shifts the next page. A cursor naming no listed
session is ``-32602``. Sessions without a workspace are not listed (ACP requires a
``cwd``). A title is the first user prompt (:func:`~dsh.core.session.session_title`),
known for the sessions live in this process; reading a stored log without loading it
is a backend detail, so stored-only sessions are listed without one (loading would
repair a crash tail of a log another process may still be writing).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from typing import Any, Final

from dsh.acp.rpc import invalid_params
from dsh.core.session import SessionHeader

PAGE_SIZE: Final = 50


def encode_cursor(session_id: str) -> str:
    """The opaque cursor that resumes a listing after ``session_id``."""
    return base64.urlsafe_b64encode(session_id.encode()).decode()


def list_page(
    headers: Sequence[SessionHeader],
    title_of: Callable[[str], str | None],
    cwd: str | None,
    cursor: str | None,
) -> dict[str, Any]:
    """The ``session/list`` result for ``headers`` (``title_of`` gives a session's title, or None)."""
    rows = sorted(
        (h for h in headers if isinstance(h.cwd, str) and (cwd is None or h.cwd == cwd)),
        key=lambda h: (-h.created_at, h.id),
    )
    start = 0
    if cursor is not None:
        ids = [encode_cursor(h.id) for h in rows]
        if cursor not in ids:
            raise invalid_params(f"unknown cursor: {cursor}; start again without one")
        start = ids.index(cursor) + 1
    page = rows[start : start + PAGE_SIZE]
    sessions: list[dict[str, Any]] = []
    for header in page:
        info: dict[str, Any] = {"sessionId": header.id, "cwd": header.cwd}
        title = title_of(header.id)
        if title is not None:
            info["title"] = title
        sessions.append(info)
    result: dict[str, Any] = {"sessions": sessions}
    if start + PAGE_SIZE < len(rows):
        result["nextCursor"] = encode_cursor(page[-1].id)
    return result
