"""The agent's inbox: queued messages, steering messages and one wake-up slot (SPEC §8.3)."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dsh.core.llm import ContentBlock, MessageSource


@dataclass(frozen=True, slots=True)
class InboxMessage:
    """One message waiting for a turn: what was said and who said it."""

    content: tuple[ContentBlock, ...]
    source: MessageSource


class Inbox:
    """Two FIFOs (``queued`` starts turns, ``steering`` joins the running one) and a wake-up.

    Only the newest :meth:`wait_for_queued` waiter is woken by :meth:`enqueue`; an
    older waiter whose slot was overwritten resolves only through its ``cancel``.
    A wake-up that arrives while nobody waits is kept (until the queue is drained),
    so the driver cannot miss it just because its task had not reached its wait yet;
    the driver must therefore tolerate waking to an empty queue.
    """

    __slots__ = ("_pending_wake", "_queued", "_steering", "wakeup")

    def __init__(self) -> None:
        self._queued: deque[InboxMessage] = deque()
        self._steering: deque[InboxMessage] = deque()
        self.wakeup: Callable[[], None] | None = None
        self._pending_wake = False

    def has_queued(self) -> bool:
        return bool(self._queued)

    def has_steering(self) -> bool:
        return bool(self._steering)

    def enqueue(self, message: InboxMessage) -> None:
        self._queued.append(message)
        if self.wakeup is not None:
            self.wakeup()
        else:
            self._pending_wake = True

    def steer(self, message: InboxMessage) -> None:
        self._steering.append(message)

    def drain_queued(self) -> list[InboxMessage]:
        drained = list(self._queued)
        self._queued.clear()
        self._pending_wake = False
        return drained

    def drain_steering(self) -> list[InboxMessage]:
        drained = list(self._steering)
        self._steering.clear()
        return drained

    def clear(self) -> None:
        self._queued.clear()
        self._steering.clear()

    async def wait_for_queued(self, cancel: asyncio.Future[Any]) -> None:
        """Return once something is queued (or a wake-up is pending), or once ``cancel`` completes."""
        if self._queued or self._pending_wake:
            self._pending_wake = False
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake(*_: object) -> None:
            if not waiter.done():
                waiter.set_result(None)

        self.wakeup = wake
        cancel.add_done_callback(wake)
        try:
            await waiter
        finally:
            cancel.remove_done_callback(wake)
            if self.wakeup is wake:
                self.wakeup = None
