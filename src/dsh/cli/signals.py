"""Signal handling for commands that own the terminal: handlers on the running event loop.

``dsh run`` and ``dsh chat`` treat SIGINT (Ctrl-C), SIGTERM (``timeout``, CI limits,
systemd) and SIGHUP (the terminal closed) alike: the first one cancels the turn in
progress, so the log records its end and the tool process groups are killed as the
step aborts, and the command then exits in order (the tree is disposed, which flushes
the session log). A second signal stops waiting for the turn. The exit status names
the signal: :data:`SIGNAL_STATUS`.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals ``dsh run`` and ``dsh chat`` answer with a cancel and an orderly exit."""

SIGNAL_STATUS: dict[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}
"""The exit status after each of :data:`STOP_SIGNALS` (128 + the signal number, as shells report it)."""

SIGNAL_REASON: dict[int, str] = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated", signal.SIGHUP: "hangup"}
"""The abort reason each of :data:`STOP_SIGNALS` leaves in the log."""


@contextmanager
def on_signals(callback: Callable[[], object], *numbers: signal.Signals) -> Iterator[None]:
    """While the block runs, call ``callback`` on the loop whenever one of ``numbers`` arrives.

    The handlers run as ordinary loop callbacks (never inside arbitrary code, unlike
    Python's default ``KeyboardInterrupt``), so ``callback`` may touch agents and
    events. On exit the default handling of each signal is restored.
    """
    with on_numbered_signals(lambda _number: callback(), *numbers):
        yield


@contextmanager
def on_numbered_signals(callback: Callable[[int], object], *numbers: signal.Signals) -> Iterator[None]:
    """As :func:`on_signals`, calling ``callback(number)`` with the signal that arrived."""
    loop = asyncio.get_running_loop()
    for number in numbers:
        loop.add_signal_handler(number, callback, int(number))
    try:
        yield
    finally:
        for number in numbers:
            loop.remove_signal_handler(number)


async def first_of(wanted: asyncio.Future[None] | asyncio.Task[None], stop: asyncio.Event) -> bool:
    """Wait until ``wanted`` finishes (True) or ``stop`` is set first (False); cancel the loser.

    An exception ``wanted`` ended with propagates.
    """
    stopped = asyncio.ensure_future(stop.wait())
    racers: set[asyncio.Future[Any]] = {wanted, stopped}
    done, _ = await asyncio.wait(racers, return_when=asyncio.FIRST_COMPLETED)
    stopped.cancel()
    if wanted in done:
        await asyncio.gather(stopped, return_exceptions=True)
        wanted.result()
        return True
    wanted.cancel()
    await asyncio.gather(wanted, stopped, return_exceptions=True)
    return False
