"""Delayed callbacks a caller can replace: the shape of ``loop.call_later``, for a test's fake clock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class TimerHandle(Protocol):
    """A scheduled callback that can be called off (``asyncio.TimerHandle`` fits)."""

    def cancel(self) -> None: ...


Timer = Callable[[float, Callable[[], object]], TimerHandle]
"""``timer(delay, callback)`` runs ``callback`` after ``delay`` seconds and returns its handle;
where a timer is optional, None means the running loop's ``call_later``."""
