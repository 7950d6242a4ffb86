"""Worker-thread helpers for the offload tests: a gate a thread waits at, and waiting for it from the loop."""

from __future__ import annotations

import asyncio
import threading

WAIT = 30.0
"""Upper bound for a thread to wait on an event the test sets (a hang fails instead of blocking)."""


class Gate:
    """A blocking point for worker threads: ``entered`` is set when a thread arrives, which
    then waits for ``release``."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def pass_through(self) -> None:
        self.entered.set()
        assert self.release.wait(WAIT)


async def wait_in_thread(flag: threading.Event) -> None:
    """Await a threading.Event without blocking the event loop."""
    assert await asyncio.get_running_loop().run_in_executor(None, flag.wait, WAIT)
