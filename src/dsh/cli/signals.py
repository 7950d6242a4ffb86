"""Signal handling for commands that own the terminal: handlers on the running event loop."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def on_signals(callback: Callable[[], object], *numbers: signal.Signals) -> Iterator[None]:
    """While the block runs, call ``callback`` on the loop whenever one of ``numbers`` arrives.

    The handlers run as ordinary loop callbacks (never inside arbitrary code, unlike
    Python's default ``KeyboardInterrupt``), so ``callback`` may touch agents and
    events. On exit the default handling of each signal is restored.
    """
    loop = asyncio.get_running_loop()
    for number in numbers:
        loop.add_signal_handler(number, callback)
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
