"""A first-come, first-served count of slots whose waits end on an abort signal."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque

from dsh.kernel import AbortError, AbortSignal


class Slots:
    """At most ``size`` holders at once; a waiter gets the slot a holder frees, in arrival order.

    A freed slot is handed straight to the oldest waiter (a caller arriving later never
    takes it first). :meth:`take` ends early when its ``signal`` fires (``AbortError``
    with the signal's reason) or its task is cancelled; either way the caller holds
    nothing and the slot it would have got goes to the next waiter. A holder gives
    its slot back with :meth:`give`, exactly once per successful :meth:`take`.
    """

    __slots__ = ("_waiters", "held", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self.held = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def waiting(self) -> int:
        """How many callers wait for a slot."""
        return len(self._waiters)

    async def take(self, signal: AbortSignal | None) -> None:
        """Hold a slot, waiting for one when all are held; see the class docstring."""
        if signal is not None:
            signal.throw_if_aborted()
        if self.held < self.size:  # a freed slot goes to a waiter at once, so none waits while one is free
            self.held += 1
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(granted)
        unhook = signal.add_callback(lambda: _refuse(granted, signal)) if signal is not None else None
        try:
            await granted
        except BaseException:
            if granted.done() and not granted.cancelled() and granted.exception() is None:
                self.give()  # granted while the waiter was being cancelled: pass the slot on
            else:
                self._forget(granted)
            raise
        finally:
            if unhook is not None:
                unhook()

    def give(self) -> None:
        """Give a held slot back: to the oldest waiter, else to the free count."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot moves over: ``held`` stays the same
                return
        self.held -= 1

    def _forget(self, waiter: asyncio.Future[None]) -> None:
        with contextlib.suppress(ValueError):  # already taken off by give(), which skips a finished waiter
            self._waiters.remove(waiter)


def _refuse(waiter: asyncio.Future[None], signal: AbortSignal) -> None:
    if not waiter.done():
        waiter.set_exception(AbortError(signal.reason))
