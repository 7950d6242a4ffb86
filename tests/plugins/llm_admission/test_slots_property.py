"""Slots under random interleavings: never over the size, served in arrival order, nothing held after an abort."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.kernel import AbortController, AbortError
from dsh.plugins.llm_admission import Slots

Step = tuple[str, int]
STEPS = st.lists(
    st.tuples(st.sampled_from(["arrive", "abort", "cancel", "give", "tick"]), st.integers(0, 11)), max_size=40
)


@dataclass
class Caller:
    """One caller of :meth:`Slots.take`: its task, its abort controller, and what became of it."""

    order: int
    task: asyncio.Task[None]
    abort: AbortController
    given_back: bool = False


@dataclass
class World:
    slots: Slots
    callers: list[Caller] = field(default_factory=list)
    granted: list[int] = field(default_factory=list)

    def holding(self) -> list[Caller]:
        """The callers whose take succeeded and who have not given the slot back."""
        return [
            caller
            for caller in self.callers
            if caller.task.done() and not caller.task.cancelled() and caller.task.exception() is None
            if not caller.given_back
        ]


async def _take(world: World, order: int, controller: AbortController) -> None:
    await world.slots.take(controller.signal)
    world.granted.append(order)


async def _run(size: int, steps: list[Step]) -> None:
    world = World(Slots(size))
    for action, index in steps:
        if action == "arrive":
            controller = AbortController()
            order = len(world.callers)
            world.callers.append(Caller(order, asyncio.ensure_future(_take(world, order, controller)), controller))
        elif world.callers:
            caller = world.callers[index % len(world.callers)]
            if action == "abort":
                caller.abort.abort("stop")
            elif action == "cancel":
                caller.task.cancel()
            elif action == "give" and caller in world.holding():
                caller.given_back = True
                world.slots.give()
        for _ in range(3):
            await asyncio.sleep(0)
        assert world.slots.held == len(world.holding()) <= size
        assert world.granted == sorted(world.granted)  # nobody overtakes an earlier caller still waiting
    while world.holding() or world.slots.waiting:  # give everything back: every waiter left is served in turn
        for caller in world.holding():
            caller.given_back = True
            world.slots.give()
        await asyncio.sleep(0)
    await asyncio.gather(*(caller.task for caller in world.callers), return_exceptions=True)
    assert world.slots.held == 0
    for caller in world.callers:
        if caller.order not in world.granted:  # refused: by its abort or its cancellation, never silently
            assert caller.task.cancelled() or isinstance(caller.task.exception(), AbortError)


@settings(max_examples=150, deadline=None)
@given(size=st.integers(1, 3), steps=STEPS)
def test_random_interleavings_never_exceed_the_size_serve_in_order_and_leave_nothing_held(
    size: int, steps: list[Step]
) -> None:
    asyncio.run(_run(size, steps))
