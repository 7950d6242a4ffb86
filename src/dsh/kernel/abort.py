"""Cooperative cancellation that carries its reason (SPEC §1.6).

An :class:`AbortController` owns one :class:`AbortSignal`. Work that can be stopped
(a model stream, a tool, a subprocess) observes the signal: it checks ``aborted``,
registers a callback, or awaits :meth:`AbortSignal.wait` beside its real work. The
reason is kept because the agent loop records *why* work stopped ("cancelled",
"disposed", a user's words), which ``asyncio.Task.cancel`` cannot carry.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

_log = logging.getLogger("dsh.kernel")


class AbortError(Exception):
    """Raised by :meth:`AbortSignal.throw_if_aborted`; the message is the reason."""

    def __init__(self, reason: object) -> None:
        super().__init__(str(reason))
        self.reason = reason


class AbortSignal:
    """The observing side of an :class:`AbortController`.

    Callbacks run synchronously, once, in registration order, when the controller
    aborts; a callback that raises is logged and does not stop the others.
    """

    __slots__ = ("_aborted", "_callbacks", "_reason", "_waiters")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: object = None
        self._callbacks: list[Callable[[], object]] = []
        self._waiters: list[asyncio.Future[None]] = []

    @property
    def aborted(self) -> bool:
        return self._aborted

    @property
    def reason(self) -> object:
        """Why the signal fired (None until it has)."""
        return self._reason

    def add_callback(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Run ``callback`` when the signal fires (at once if it already has).

        Returns a disposer that removes the callback; calling it twice is harmless.
        """
        if self._aborted:
            callback()
            return _noop
        self._callbacks.append(callback)

        def remove() -> None:
            try:
                self._callbacks.remove(callback)
            except ValueError:
                pass

        return remove

    async def wait(self) -> None:
        """Return once the signal has fired."""
        if self._aborted:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        try:
            await future
        finally:
            if future in self._waiters:
                self._waiters.remove(future)

    def throw_if_aborted(self) -> None:
        """Raise :class:`AbortError` with the reason if the signal has fired."""
        if self._aborted:
            raise AbortError(self._reason)

    def _fire(self, reason: object) -> None:
        self._aborted = True
        self._reason = reason
        callbacks, self._callbacks = self._callbacks, []
        waiters, self._waiters = self._waiters, []
        for future in waiters:
            if not future.done():
                future.set_result(None)
        for callback in callbacks:
            try:
                callback()
            except Exception:
                _log.exception("abort callback raised")


def _noop() -> None:
    return None


class AbortController:
    """Fires its :attr:`signal` once, with a reason; later aborts are ignored."""

    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = AbortSignal()

    def abort(self, reason: object = "aborted") -> None:
        if not self.signal.aborted:
            self.signal._fire(reason)


def aborted_signal(reason: object = "aborted") -> AbortSignal:
    """A signal that has already fired (handy for callers and tests)."""
    controller = AbortController()
    controller.abort(reason)
    return controller.signal
