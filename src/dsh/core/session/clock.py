"""The session clock: integer Unix epoch milliseconds (SPEC §0.3).

Every event ``time`` and default ``createdAt`` comes from :func:`now_ms`, looked up
through this module at call time, so a test can pin the clock with
``monkeypatch.setattr(dsh.core.session.clock, "now_ms", lambda: 1000)``.
"""

from __future__ import annotations

import time


def now_ms() -> int:
    """The current time in whole milliseconds since the Unix epoch (always an ``int``)."""
    return time.time_ns() // 1_000_000
