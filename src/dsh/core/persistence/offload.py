"""Blocking storage work off the event loop, completed as a unit even when its caller is cancelled."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, TypeVar

T = TypeVar("T")


async def _settle(future: asyncio.Future[Any]) -> None:
    """Wait until ``future`` is done, through any number of cancellations of the waiter."""
    while not future.done():
        try:
            await asyncio.wait((future,))
        except asyncio.CancelledError:
            continue
    if not future.cancelled():
        future.exception()  # the waiter is being cancelled: the outcome is dropped, not "never retrieved"


async def run_blocking(executor: Executor | None, work: Callable[[], T]) -> T:
    """Run ``work()`` on ``executor`` (``None``: the event loop's default) and return its result.

    ``work`` may block (file I/O, ``fsync``, a database transaction); the event loop
    keeps running meanwhile. Its exception is raised here as is.

    Cancellation: once handed over, ``work`` always runs to its end. If the awaiting
    task is cancelled, this still waits for ``work`` to finish (so a write and its
    rollback complete as a unit, and nothing chained after this call touches the same
    storage while it runs), drops its outcome, then raises ``CancelledError``.
    """
    future = asyncio.get_running_loop().run_in_executor(executor, work)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        await _settle(future)
        raise
