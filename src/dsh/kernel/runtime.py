"""State shared by every context of one tree: services, listeners, dependencies."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, NamedTuple

from dsh.kernel.config import KernelError
from dsh.kernel.fiber import Fiber, FiberState

if TYPE_CHECKING:
    from dsh.kernel.context import Context


class ListenerEntry(NamedTuple):
    listener: Any
    ctx: Context


class Provision(NamedTuple):
    service: object
    fiber: Fiber


class Runtime:
    """The registry behind a root :class:`~dsh.kernel.context.Context`."""

    def __init__(self) -> None:
        self.services: dict[str, Provision] = {}
        self.listeners: dict[str, list[ListenerEntry]] = {}
        self.dependents: list[Fiber] = []
        self.background: set[asyncio.Future[Any]] = set()

    # ------------------------------------------------------------------ services
    def lookup(self, name: str) -> object | None:
        provision = self.services.get(name)
        if provision is None or provision.fiber.state is not FiberState.ACTIVE:
            return None
        return provision.service

    def satisfied(self, names: tuple[str, ...]) -> bool:
        return all(self.lookup(name) is not None for name in names)

    def provide(self, name: str, service: object, fiber: Fiber) -> None:
        existing = self.services.get(name)
        if existing is not None and existing.fiber is not fiber:
            raise KernelError(
                f'service "{name}" is already provided by plugin "{existing.fiber.name}"; '
                "dispose that plugin before loading another provider"
            )
        self.services[name] = Provision(service, fiber)

    def withdraw(self, name: str, service: object) -> None:
        provision = self.services.get(name)
        if provision is not None and provision.service is service:
            del self.services[name]

    def provides(self, fiber: Fiber) -> bool:
        return any(provision.fiber is fiber for provision in self.services.values())

    # -------------------------------------------------------------- dependencies
    def track(self, fiber: Fiber) -> None:
        if fiber.inject:
            self.dependents.append(fiber)

    def forget(self, fiber: Fiber) -> None:
        if fiber in self.dependents:
            self.dependents.remove(fiber)

    def reconcile(self) -> list[Awaitable[None]]:
        """Start fibers whose services all exist; unload active ones that lost one.

        Returns the unloads in flight so a disposing provider can await them.
        """
        unloads: list[Awaitable[None]] = []
        for fiber in list(self.dependents):
            ok = self.satisfied(fiber.inject)
            if fiber.state is FiberState.PENDING and ok:
                fiber._schedule_boot()
            elif fiber.state is FiberState.ACTIVE and not ok:
                task = asyncio.ensure_future(fiber._unload())
                self.background.add(task)
                task.add_done_callback(self.background.discard)
                unloads.append(task)
        return unloads
