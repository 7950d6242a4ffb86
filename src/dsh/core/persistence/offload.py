"""Blocking storage work off the event loop, completed as a unit even when its caller is cancelled."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Executor
from functools import partial
from typing import Any, TypeAlias, TypeVar

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


_Piece: TypeAlias = "tuple[Callable[[], Any], asyncio.Future[Any]]"
"""A piece of work handed over, and the future its caller awaits."""


class BatchedOffload:
    """Blocking work handed to worker threads in batches, at most ``width`` batches at a time.

    :meth:`run` is :func:`run_blocking` with one difference: while ``width`` batches are
    in flight, new work waits, and the next batch takes everything that waited. A batch
    is one hop to ``executor`` (``None``: the event loop's default) and one back: its
    work runs there one piece after another, in the order it was handed over, and each
    caller gets its own piece's result or exception once the batch is back on the loop.
    When the loop is busy, batches are slower to come back, so more work waits and each
    hop carries more of it: a burst of flushes shares a few hops instead of taking one
    each. Under light load every piece starts at once, as with :func:`run_blocking`.

    A piece of work that blocks holds up the rest of its batch (and fills one of the
    ``width`` places), so ``width`` is how many stalled pieces the rest can get past.
    Cancellation is :func:`run_blocking`'s: a piece handed over always runs to its end,
    and a cancelled caller waits for it, drops its outcome, then raises
    ``CancelledError``. A batch the executor drops without running (shut down with
    ``cancel_futures``) cancels its callers; an executor already shut down refuses a
    batch, and each of its callers gets that ``RuntimeError``.
    """

    def __init__(self, executor: Executor | None = None, *, width: int = 4) -> None:
        if width < 1:
            raise ValueError(f"width must be at least 1, got {width}")
        self._executor = executor
        self._width = width
        self._in_flight = 0
        self._waiting: list[_Piece] = []

    async def run(self, work: Callable[[], T]) -> T:
        """Run ``work()`` in a batch (see the class docstring) and return its result."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._waiting.append((work, future))
        if self._in_flight < self._width:
            self._send()
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            await _settle(future)
            raise

    def _send(self) -> None:
        """Hand every waiting piece to the executor as one batch; each caller gets the executor's refusal."""
        batch, self._waiting = self._waiting, []
        try:
            done = asyncio.get_running_loop().run_in_executor(self._executor, _run_batch, batch)
        except RuntimeError as refused:  # the executor was shut down: nothing of the batch runs
            for _, future in batch:
                future.set_exception(refused)
            return
        self._in_flight += 1
        done.add_done_callback(partial(self._returned, batch))

    def _returned(self, batch: list[_Piece], done: asyncio.Future[Any]) -> None:
        self._in_flight -= 1
        if done.cancelled():
            for _, future in batch:
                future.cancel()
        elif (error := done.exception()) is not None:  # a BaseException (SystemExit, ...) ended the batch
            for _, future in batch:
                future.set_exception(error)
        else:
            for (_, future), (failed, value) in zip(batch, done.result(), strict=True):
                if failed:
                    future.set_exception(value)
                else:
                    future.set_result(value)
        if self._waiting:
            self._send()


def _run_batch(batch: list[_Piece]) -> list[tuple[bool, Any]]:
    """Run each piece's work in turn (in a worker thread, which never touches the futures):
    ``(failed, exception or result)`` of each."""
    outcomes: list[tuple[bool, Any]] = []
    for work, _ in batch:
        try:
            outcomes.append((False, work()))
        except Exception as error:
            outcomes.append((True, error))
    return outcomes
