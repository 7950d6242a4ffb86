"""Cooperative cancellation with a reason (SPEC §1.6)."""

from __future__ import annotations

import asyncio
import logging

import pytest

from dsh.kernel import AbortController, AbortError, aborted_signal


async def test_a_fresh_signal_is_not_aborted_and_has_no_reason() -> None:
    """Nothing fired yet; throw_if_aborted is a no-op."""
    signal = AbortController().signal
    assert not signal.aborted
    assert signal.reason is None
    signal.throw_if_aborted()


async def test_abort_records_the_reason_and_later_aborts_are_ignored() -> None:
    """The first reason wins (the loop records it in the session log)."""
    controller = AbortController()
    controller.abort("session/cancel")
    controller.abort("disposed")
    assert controller.signal.aborted
    assert controller.signal.reason == "session/cancel"


async def test_the_default_reason_is_aborted() -> None:
    """abort() with no argument still carries a reason."""
    controller = AbortController()
    controller.abort()
    assert controller.signal.reason == "aborted"


async def test_callbacks_run_once_in_order_when_the_signal_fires() -> None:
    """Each callback runs exactly once, even if abort is called again."""
    controller = AbortController()
    calls: list[str] = []
    controller.signal.add_callback(lambda: calls.append("a"))
    controller.signal.add_callback(lambda: calls.append("b"))
    controller.abort("stop")
    controller.abort("again")
    assert calls == ["a", "b"]


async def test_a_removed_callback_does_not_run_and_removing_twice_is_harmless() -> None:
    """add_callback returns its remover."""
    controller = AbortController()
    calls: list[str] = []
    remove = controller.signal.add_callback(lambda: calls.append("removed"))
    controller.signal.add_callback(lambda: calls.append("kept"))
    remove()
    remove()
    controller.abort()
    assert calls == ["kept"]


async def test_a_callback_added_after_the_abort_runs_at_once() -> None:
    """Late observers are not left waiting; their remover is a no-op."""
    signal = aborted_signal("late")
    calls: list[object] = []
    remove = signal.add_callback(lambda: calls.append(signal.reason))
    assert calls == ["late"]
    assert remove() is None


async def test_a_raising_callback_is_logged_and_the_others_still_run(caplog: pytest.LogCaptureFixture) -> None:
    """One bad observer cannot stop the cancellation of the rest."""
    controller = AbortController()
    calls: list[str] = []

    def broken() -> None:
        raise RuntimeError("observer failed")

    controller.signal.add_callback(broken)
    controller.signal.add_callback(lambda: calls.append("after"))
    with caplog.at_level(logging.ERROR, logger="dsh.kernel"):
        controller.abort()
    assert calls == ["after"]
    assert any(record.exc_info and "observer failed" in str(record.exc_info[1]) for record in caplog.records)


async def test_wait_returns_once_the_signal_fires() -> None:
    """Several waiters are released by one abort; waiting on a fired signal returns at once."""
    controller = AbortController()
    waiters = [asyncio.ensure_future(controller.signal.wait()) for _ in range(2)]
    await asyncio.sleep(0)
    assert not any(waiter.done() for waiter in waiters)
    controller.abort("go")
    await asyncio.gather(*waiters)
    await controller.signal.wait()


async def test_a_cancelled_wait_leaves_no_waiter_behind() -> None:
    """Racing wait() against other work and cancelling it is clean."""
    controller = AbortController()
    waiter = asyncio.ensure_future(controller.signal.wait())
    await asyncio.sleep(0)
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert controller.signal._waiters == []
    controller.abort()


async def test_aborting_while_a_cancelled_wait_unwinds_is_clean() -> None:
    """A waiter cancelled in the same tick as the abort is skipped, not resolved twice."""
    controller = AbortController()
    waiter = asyncio.ensure_future(controller.signal.wait())
    await asyncio.sleep(0)
    waiter.cancel()
    controller.abort("both at once")
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert controller.signal.aborted


async def test_throw_if_aborted_raises_abort_error_carrying_the_reason() -> None:
    """The reason travels in the error, and as its message."""
    signal = aborted_signal("user pressed stop")
    with pytest.raises(AbortError, match="user pressed stop") as caught:
        signal.throw_if_aborted()
    assert caught.value.reason == "user pressed stop"
