"""Signal handlers on the loop, and waiting for work or a stop."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from dsh.cli.signals import first_of, on_numbered_signals, on_signals


async def test_a_signal_calls_the_callback_only_inside_the_block() -> None:
    seen = asyncio.Event()
    with on_signals(seen.set, signal.SIGUSR1):
        os.kill(os.getpid(), signal.SIGUSR1)
        await seen.wait()
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL


async def test_numbered_handlers_get_the_signal_that_arrived() -> None:
    seen: asyncio.Queue[int] = asyncio.Queue()
    with on_numbered_signals(seen.put_nowait, signal.SIGUSR1, signal.SIGUSR2):
        os.kill(os.getpid(), signal.SIGUSR2)
        assert await seen.get() == signal.SIGUSR2
    assert signal.getsignal(signal.SIGUSR2) == signal.SIG_DFL


async def test_first_of_returns_true_when_the_work_finishes_first() -> None:
    stop = asyncio.Event()
    assert await first_of(asyncio.ensure_future(asyncio.sleep(0)), stop) is True


async def test_first_of_cancels_the_work_when_stopped() -> None:
    stop = asyncio.Event()
    work = asyncio.ensure_future(asyncio.Event().wait())
    stop.set()
    assert await first_of(work, stop) is False
    assert work.cancelled()


async def test_first_of_raises_what_the_work_raised() -> None:
    async def boom() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        await first_of(asyncio.ensure_future(boom()), asyncio.Event())
