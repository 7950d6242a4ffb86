"""SPEC §8.9: the Inbox."""

from __future__ import annotations

import asyncio

from dsh.agent_loop import Inbox, InboxMessage


def message(text: str) -> InboxMessage:
    return InboxMessage([{"type": "text", "text": text}], {"kind": "user"})


def texts(messages: list[InboxMessage]) -> list[str]:
    return [m.content[0]["text"] for m in messages]  # type: ignore[typeddict-item]


def test_enqueues_and_drains_queued_messages_in_fifo_order() -> None:
    """enqueues and drains queued messages in FIFO order"""
    inbox = Inbox()
    for text in ("a", "b", "c"):
        inbox.enqueue(message(text))
    assert inbox.has_queued()
    assert texts(inbox.drain_queued()) == ["a", "b", "c"]
    assert not inbox.has_queued()
    assert inbox.drain_queued() == []


def test_pushes_and_drains_steering_messages_separately_from_queued() -> None:
    """pushes and drains steering messages separately from queued"""
    inbox = Inbox()
    inbox.enqueue(message("q"))
    inbox.steer(message("s1"))
    inbox.steer(message("s2"))
    assert inbox.has_steering()
    assert texts(inbox.drain_steering()) == ["s1", "s2"]
    assert not inbox.has_steering()
    assert texts(inbox.drain_queued()) == ["q"]


def test_clear_discards_both_fifos() -> None:
    inbox = Inbox()
    inbox.enqueue(message("q"))
    inbox.steer(message("s"))
    inbox.clear()
    assert not inbox.has_queued()
    assert not inbox.has_steering()


async def test_wait_for_queued_returns_immediately_when_a_queued_message_is_already_present() -> None:
    """waitForQueued returns immediately when a queued message is already present"""
    inbox = Inbox()
    inbox.enqueue(message("x"))
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    await inbox.wait_for_queued(never)
    assert inbox.wakeup is None


async def test_wait_for_queued_resolves_when_a_message_is_enqueued() -> None:
    """waitForQueued resolves when a message is enqueued"""
    inbox = Inbox()
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    waiting = asyncio.ensure_future(inbox.wait_for_queued(never))
    await asyncio.sleep(0)
    assert not waiting.done()
    inbox.enqueue(message("x"))
    await waiting
    assert inbox.has_queued()


async def test_wait_for_queued_resolves_when_the_cancel_promise_resolves() -> None:
    """waitForQueued resolves when the cancel promise resolves"""
    inbox = Inbox()
    cancel: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    waiting = asyncio.ensure_future(inbox.wait_for_queued(cancel))
    await asyncio.sleep(0)
    cancel.set_result(None)
    await waiting
    assert not inbox.has_queued()
    assert inbox.wakeup is None


async def test_wait_for_queued_overwrites_the_previous_wakeup_callback() -> None:
    """waitForQueued overwrites the previous wakeup callback (only the latest waiter is notified)"""
    inbox = Inbox()
    loop = asyncio.get_running_loop()
    first_cancel: asyncio.Future[None] = loop.create_future()
    never: asyncio.Future[None] = loop.create_future()
    first = asyncio.ensure_future(inbox.wait_for_queued(first_cancel))
    await asyncio.sleep(0)
    second = asyncio.ensure_future(inbox.wait_for_queued(never))
    await asyncio.sleep(0)
    inbox.enqueue(message("x"))
    await second
    await asyncio.sleep(0)
    assert not first.done()
    first_cancel.set_result(None)
    await first


async def test_clears_wakeup_in_finally_handler_when_enqueue_resolves() -> None:
    """clears wakeup in finally handler when enqueue resolves"""
    inbox = Inbox()
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    waiting = asyncio.ensure_future(inbox.wait_for_queued(never))
    await asyncio.sleep(0)
    assert inbox.wakeup is not None
    inbox.enqueue(message("x"))
    await waiting
    assert inbox.wakeup is None


async def test_finally_handler_does_not_clear_wakeup_when_a_different_waiter_overwrote_it() -> None:
    """finally handler does not clear wakeup when a different waiter overwrote it"""
    inbox = Inbox()
    loop = asyncio.get_running_loop()
    first_cancel: asyncio.Future[None] = loop.create_future()
    never: asyncio.Future[None] = loop.create_future()
    first = asyncio.ensure_future(inbox.wait_for_queued(first_cancel))
    await asyncio.sleep(0)
    second = asyncio.ensure_future(inbox.wait_for_queued(never))
    await asyncio.sleep(0)
    latest = inbox.wakeup
    first_cancel.set_result(None)
    await first
    assert inbox.wakeup is latest
    assert latest is not None
    latest()
    await second


async def test_a_wake_up_with_nobody_waiting_is_kept_until_the_queue_is_drained() -> None:
    inbox = Inbox()
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    inbox.enqueue(message("x"))
    inbox.clear()
    await inbox.wait_for_queued(never)  # the kept wake-up returns at once
    inbox.enqueue(message("y"))
    inbox.drain_queued()
    waiting = asyncio.ensure_future(inbox.wait_for_queued(never))
    await asyncio.sleep(0)
    assert not waiting.done()
    inbox.enqueue(message("z"))
    await waiting
