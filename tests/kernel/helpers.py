"""Helpers for kernel tests (and for any test that wants to prove nothing leaked)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any

from dsh.kernel import Context, Effect, EmitEvent, Fiber, FiberState, Service, ServiceKey

PING: EmitEvent[[str]] = EmitEvent("test/ping")


def leftovers(root: Context, fibers: Iterable[Fiber] = ()) -> list[str]:
    """Everything a fully disposed tree still holds; empty when nothing leaked.

    Looks at the runtime shared by ``root``'s tree (listeners, services, fibers
    waiting on services) and at ``root`` and each of ``fibers`` (effects, tasks,
    state).
    """
    runtime = root.runtime
    found = [f"listener {name}" for name, entries in runtime.listeners.items() for _ in entries]
    found += [f"service {name} of {provision.fiber.name}" for name, provision in runtime.services.items()]
    found += [f"dependent {fiber.name}" for fiber in runtime.dependents]
    for fiber in (root.fiber, *fibers):
        if fiber.effect_count:
            found.append(f"{fiber.effect_count} effects on {fiber.name}")
        if fiber.task_count:
            found.append(f"{fiber.task_count} tasks on {fiber.name}")
        if fiber is not root.fiber and fiber.state is not FiberState.DISPOSED:
            found.append(f"{fiber.name} is {fiber.state.value}")
    return found


async def ticks(count: int = 5) -> None:
    """Let the event loop run ``count`` rounds (tiny zero sleeps, never wall-clock waits)."""
    for _ in range(count):
        await asyncio.sleep(0)


class Registry(Service):
    """A minimal registry service (a class plugin): items added through it are effects of the caller."""

    key: ServiceKey[Any] | str = "registry"

    def __init__(self, ctx: Context, config: object = None) -> None:
        super().__init__(ctx, self.key)
        self.items: list[object] = []

    def add(self, item: object) -> Effect:
        def body() -> Callable[[], None]:
            self.items.append(item)
            return lambda: self.items.remove(item)

        return self.ctx.effect(body, f"item {item!r}")


REGISTRY: ServiceKey[Registry] = ServiceKey("registry")
