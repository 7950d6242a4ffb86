"""Racing awaited work against a step's abort signal.

The step's :class:`~dsh.kernel.AbortController` is the source of truth for why work
stopped. Its abort interrupts a blocked model stream or tool at once (the awaited
work is cancelled), so a stalled provider cannot hold a turn open.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine
from typing import Any, TypeVar

from dsh.kernel import AbortSignal

T = TypeVar("T")


class StepAbortedError(Exception):
    """The step's signal fired; the message is the abort reason."""


def abort_reason(signal: AbortSignal) -> str:
    """The signal's reason as text (``"aborted"`` when it gave none)."""
    reason = signal.reason
    return str(reason if reason is not None else "aborted")


async def _reported(work: Awaitable[T]) -> tuple[bool, Any]:
    """Await ``work`` and report how it ended instead of raising: ``(True, value)`` or ``(False, error)``.

    A task running this finishes normally even when ``work`` fails or is cancelled,
    so whoever awaits the task is resumed with a value, never by a thrown exception.
    """
    try:
        return True, await work
    except (Exception, asyncio.CancelledError) as error:
        return False, error


async def race_abort(work: Coroutine[Any, Any, T], signal: AbortSignal) -> T:
    """Await ``work``; if ``signal`` fires first, cancel it and raise :class:`StepAbortedError`.

    The work runs as its own task (so the abort can interrupt it at once) that
    reports its outcome as a value, and a failure is raised here as an ordinary
    exception rather than thrown into the awaiting coroutine chain (CPython 3.11
    drops trace events for frames resumed by a throw, which would hide these lines
    from coverage). A work task cancelled before it could report (the signal fired
    before it ran, or while it finished without awaiting again) counts as aborted.
    Cancelling the caller cancels the work and waits for it; the caller's
    cancellation is re-raised even if the work swallowed it. ``work`` is closed
    unstarted when the signal has already fired.
    """
    if signal.aborted:
        work.close()
        raise StepAbortedError(abort_reason(signal))
    caller = asyncio.current_task()
    assert caller is not None, "race_abort runs inside a task"
    cancels = caller.cancelling()
    task = caller.get_loop().create_task(_reported(work))
    remove = signal.add_callback(task.cancel)
    try:
        finished, value = await task
    except asyncio.CancelledError as cancelled:
        work.close()  # never started if the task was cancelled before its first step
        finished, value = False, cancelled
    finally:
        remove()
    if caller.cancelling() > cancels:  # the caller itself is being cancelled
        raise value if isinstance(value, asyncio.CancelledError) else asyncio.CancelledError()
    if finished:
        return value  # type: ignore[no-any-return]
    if isinstance(value, Exception):
        raise value
    raise StepAbortedError(abort_reason(signal))
