"""Slots on their own: first come, first served, and a wait that ends holds nothing."""

from __future__ import annotations

import asyncio

import pytest

from dsh.kernel import AbortController, AbortError, AbortSignal, aborted_signal
from dsh.plugins.llm_admission import Slots
from tests.plugins.llm_admission.helpers import ticks, until


def waiter(slots: Slots, name: str, order: list[str], signal: AbortSignal | None = None) -> asyncio.Task[None]:
    """A task that takes a slot, then notes ``name`` in ``order``."""

    async def run() -> None:
        await slots.take(signal)
        order.append(name)

    return asyncio.create_task(run())


async def test_free_slots_are_taken_at_once_and_the_next_caller_waits() -> None:
    slots = Slots(2)
    await slots.take(None)
    await slots.take(None)
    assert (slots.held, slots.waiting) == (2, 0)
    order: list[str] = []
    third = waiter(slots, "third", order)
    await ticks()
    assert (slots.held, slots.waiting, order) == (2, 1, [])
    slots.give()
    await third
    assert (slots.held, slots.waiting, order) == (2, 0, ["third"])
    slots.give()
    slots.give()
    assert slots.held == 0


async def test_freed_slots_go_to_the_waiters_in_arrival_order_and_a_later_caller_never_overtakes() -> None:
    slots = Slots(1)
    await slots.take(None)
    order: list[str] = []
    tasks = [waiter(slots, name, order) for name in ("b", "c", "d")]
    await until(lambda: slots.waiting == 3)
    slots.give()  # the slot moves to "b" at once ...
    late = waiter(slots, "late", order)  # ... so one arriving now, before "b" runs, still queues
    await until(lambda: order == ["b"])
    assert (slots.held, slots.waiting) == (1, 3)
    slots.give()
    await until(lambda: len(order) == 2)
    slots.give()
    await until(lambda: len(order) == 3)
    slots.give()
    await asyncio.gather(*tasks, late)
    assert order == ["b", "c", "d", "late"]
    assert (slots.held, slots.waiting) == (1, 0)
    slots.give()
    assert slots.held == 0


async def test_an_abort_while_waiting_raises_the_reason_and_the_slot_goes_to_the_next_waiter() -> None:
    slots = Slots(1)
    await slots.take(None)
    controller = AbortController()
    order: list[str] = []
    aborted = waiter(slots, "aborted", order, controller.signal)
    nxt = waiter(slots, "next", order)
    await until(lambda: slots.waiting == 2)
    controller.abort("user stop")
    with pytest.raises(AbortError, match="user stop") as caught:
        await aborted
    assert caught.value.reason == "user stop"
    assert (slots.held, slots.waiting) == (1, 1)
    slots.give()
    await nxt
    assert order == ["next"]
    slots.give()
    assert (slots.held, slots.waiting) == (0, 0)


async def test_an_already_aborted_signal_raises_at_once_even_with_a_slot_free() -> None:
    slots = Slots(1)
    with pytest.raises(AbortError, match="gone"):
        await slots.take(aborted_signal("gone"))
    assert (slots.held, slots.waiting) == (0, 0)


async def test_a_give_in_the_same_tick_as_an_abort_skips_the_refused_waiter_and_frees_the_slot() -> None:
    slots = Slots(1)
    await slots.take(None)
    controller = AbortController()
    order: list[str] = []
    refused = waiter(slots, "refused", order, controller.signal)
    await until(lambda: slots.waiting == 1)
    controller.abort("stop")
    slots.give()  # the refused waiter has not run yet: it is passed over, the slot becomes free
    assert slots.held == 0
    with pytest.raises(AbortError, match="stop"):
        await refused
    assert (slots.held, slots.waiting, order) == (0, 0, [])


async def test_a_signal_firing_after_the_slot_was_granted_leaves_the_slot_with_the_waiter() -> None:
    slots = Slots(1)
    await slots.take(None)
    controller = AbortController()
    order: list[str] = []
    granted = waiter(slots, "granted", order, controller.signal)
    await until(lambda: slots.waiting == 1)
    slots.give()
    controller.abort("too late")  # the slot is already the waiter's: its take succeeds
    await granted
    assert (slots.held, slots.waiting, order) == (1, 0, ["granted"])
    slots.give()
    assert slots.held == 0


async def test_cancelling_a_waiter_holds_nothing_and_its_signal_no_longer_refers_to_it() -> None:
    slots = Slots(1)
    await slots.take(None)
    controller = AbortController()
    order: list[str] = []
    cancelled = waiter(slots, "cancelled", order, controller.signal)
    await until(lambda: slots.waiting == 1)
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert (slots.held, slots.waiting) == (1, 0)
    controller.abort("later")  # unhooked: nothing happens
    slots.give()
    assert (slots.held, slots.waiting, order) == (0, 0, [])


async def test_a_waiter_cancelled_just_after_its_slot_was_granted_passes_the_slot_to_the_next() -> None:
    slots = Slots(1)
    await slots.take(None)
    order: list[str] = []
    cancelled = waiter(slots, "cancelled", order)
    nxt = waiter(slots, "next", order)
    await until(lambda: slots.waiting == 2)
    slots.give()  # granted to "cancelled" ...
    cancelled.cancel()  # ... which is cancelled before it runs again
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    await nxt
    assert (slots.held, slots.waiting, order) == (1, 0, ["next"])
    slots.give()
    assert slots.held == 0
