"""State shared by every context of one tree: services, listeners, dependents.

Listener lists are immutable tuples replaced on every change (copy-on-write), so a
dispatch iterates the tuple it read: a snapshot without a copy on the hot path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from dsh.kernel.config import KernelError
from dsh.kernel.fiber import Fiber, FiberState

if TYPE_CHECKING:
    from dsh.kernel.context import Context


class ListenerEntry(NamedTuple):
    """One registered listener: the callable, the context it acts for, whether it is async."""

    listener: Callable[..., Any]
    ctx: Context
    is_async: bool


class Provision(NamedTuple):
    service: object
    fiber: Fiber


class Runtime:
    """The registry behind a root :class:`~dsh.kernel.context.Context`."""

    __slots__ = ("dependents", "listeners", "services")

    def __init__(self) -> None:
        self.services: dict[str, Provision] = {}
        self.listeners: dict[str, tuple[ListenerEntry, ...]] = {}
        self.dependents: dict[Fiber, None] = {}

    # ----------------------------------------------------------------- listeners
    def add_listener(self, name: str, entry: ListenerEntry, prepend: bool) -> None:
        entries = self.listeners.get(name, ())
        self.listeners[name] = (entry, *entries) if prepend else (*entries, entry)

    def remove_listener(self, name: str, entry: ListenerEntry) -> None:
        entries = tuple(item for item in self.listeners.get(name, ()) if item is not entry)
        if entries:
            self.listeners[name] = entries
        else:
            self.listeners.pop(name, None)

    # ------------------------------------------------------------------ services
    def lookup(self, name: str) -> object | None:
        """The service under ``name`` if its provider is ACTIVE, else None."""
        provision = self.services.get(name)
        if provision is None or provision.fiber.state is not FiberState.ACTIVE:
            return None
        return provision.service

    def satisfied(self, names: tuple[str, ...]) -> bool:
        return all(self.lookup(name) is not None for name in names)

    def provide(self, name: str, service: object, fiber: Fiber) -> None:
        existing = self.services.get(name)
        if existing is not None:
            raise KernelError(
                f'service "{name}" is already provided by plugin "{existing.fiber.name}"; '
                "dispose that plugin before loading another provider"
            )
        self.services[name] = Provision(service, fiber)

    def withdraw(self, name: str) -> None:
        """Undo one :meth:`provide` (which refused any second provider of ``name``)."""
        del self.services[name]

    def provides(self, fiber: Fiber) -> bool:
        return any(provision.fiber is fiber for provision in self.services.values())

    # -------------------------------------------------------------- dependencies
    def track(self, fiber: Fiber) -> None:
        if fiber.inject:
            self.dependents[fiber] = None

    def forget(self, fiber: Fiber) -> None:
        self.dependents.pop(fiber, None)

    def reconcile(self) -> list[asyncio.Task[None]]:
        """Start fibers whose services all exist; unload active ones that lost one.

        Returns the unloads in flight so a withdrawing provider can await them.
        """
        unloads: list[asyncio.Task[None]] = []
        for fiber in list(self.dependents):
            ok = self.satisfied(fiber.inject)
            if fiber.state is FiberState.PENDING and ok:
                fiber._schedule_boot()
            elif fiber.state is FiberState.ACTIVE and not ok:
                unloads.append(fiber._schedule_unload())
        return unloads
