"""Kernel properties: random load/unload/provide/withdraw sequences leave nothing behind.

A hypothesis state machine drives one real kernel on an event loop it owns. After
every step the tree is let settle (zero-length ticks until no boot, unload or
dispose task is pending) and the invariants are checked; at the end the root is
disposed and not one listener, effect, service, dependent or task may remain.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from dsh.kernel import Context, Effect, EmitEvent, Fiber, FiberState, KernelError, PluginSpec, Service
from tests.kernel.helpers import leftovers

NAMES = ("alpha", "beta", "gamma")
TICK: EmitEvent[[]] = EmitEvent("test/tick")
IDLE = "idle "


class Provided(Service):
    """A service under a chosen name."""


async def idle() -> None:
    await asyncio.Event().wait()


def apply_child(ctx: Context, config: Any) -> None:
    ctx.spawn(idle(), name=f"{IDLE}child")


def make_plugin(label: str, inject: list[str], provides: str | None, child: bool, async_listener: bool) -> PluginSpec:
    def apply(ctx: Context, config: Any) -> None:
        if provides is not None:
            Provided(ctx, provides)
        if async_listener:

            async def listener() -> None:
                await asyncio.sleep(0)

            ctx.on(TICK, listener)
        else:
            ctx.on(TICK, lambda: None)
        ctx.spawn(idle(), name=f"{IDLE}{label}")
        if child:
            ctx.plugin(PluginSpec(name=f"{label}/child", apply=apply_child))

    return PluginSpec(name=label, apply=apply, inject=inject)


class KernelMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.root: Context = self.run(self._make_root())
        self.fibers: list[Fiber] = []
        self.root_services: dict[str, Effect] = {}
        self.count = 0

    # ------------------------------------------------------------------ driving
    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    async def _make_root(self) -> Context:
        return Context()

    async def _settle(self) -> None:
        me = asyncio.current_task()
        for _ in range(500):
            await asyncio.sleep(0)
            busy = [t for t in asyncio.all_tasks() if t is not me and not t.get_name().startswith(IDLE)]
            if not busy:
                return
        raise AssertionError(f"the kernel did not settle: {busy}")

    def settle(self) -> None:
        self.run(self._settle())

    def alive(self) -> list[Fiber]:
        return [fiber for fiber in self.fibers if not fiber.disposing and fiber.state is not FiberState.FAILED]

    # -------------------------------------------------------------------- rules
    @rule(
        inject=st.lists(st.sampled_from(NAMES), max_size=2, unique=True),
        provides=st.none() | st.sampled_from(NAMES),
        child=st.booleans(),
        async_listener=st.booleans(),
        nested=st.booleans(),
        data=st.data(),
    )
    def load(
        self,
        inject: list[str],
        provides: str | None,
        child: bool,
        async_listener: bool,
        nested: bool,
        data: st.DataObject,
    ) -> None:
        """Load a plugin (under the root or a live plugin) that needs some services and may provide one."""
        self.count += 1
        if provides in inject:
            inject = [name for name in inject if name != provides]
        parents = [fiber for fiber in self.alive() if fiber.state is FiberState.ACTIVE]
        parent = data.draw(st.sampled_from(parents)).ctx if nested and parents else self.root
        plugin = make_plugin(f"p{self.count}", inject, provides, child, async_listener)

        async def load() -> None:
            fiber = parent.plugin(plugin)
            self.fibers.append(fiber)
            try:
                await fiber
            except KernelError:
                assert fiber.state is FiberState.FAILED

        self.run(load())
        self.settle()

    @precondition(lambda self: bool(self.fibers))
    @rule(data=st.data())
    def dispose(self, data: st.DataObject) -> None:
        """Dispose any plugin (again, possibly)."""
        fiber = data.draw(st.sampled_from(self.fibers))

        async def dispose() -> None:
            await fiber.dispose()

        self.run(dispose())
        assert fiber.state is FiberState.DISPOSED
        self.settle()

    @precondition(lambda self: bool(self.fibers))
    @rule(data=st.data(), provides=st.none() | st.sampled_from(NAMES), withdraw=st.booleans())
    def overlap(self, data: st.DataObject, provides: str | None, withdraw: bool) -> None:
        """In one tick: start a load, dispose two plugins and maybe withdraw a root service; then settle."""
        first = data.draw(st.sampled_from(self.fibers))
        second = data.draw(st.sampled_from(self.fibers))
        self.count += 1
        plugin = make_plugin(f"p{self.count}", [], provides, False, False)
        root_effect = self.root_services.pop(sorted(self.root_services)[0]) if withdraw and self.root_services else None

        async def overlap() -> None:
            fiber = self.root.plugin(plugin)
            self.fibers.append(fiber)
            if root_effect is not None:
                root_effect()
            await asyncio.gather(first.dispose(), second.dispose())
            try:
                await fiber
            except KernelError:
                assert fiber.state is FiberState.FAILED

        self.run(overlap())
        self.settle()

    @rule(name=st.sampled_from(NAMES))
    def provide_on_root(self, name: str) -> None:
        """Provide a service directly from the root (if nobody holds the name)."""
        if name in self.root.runtime.services:
            return

        async def provide() -> None:
            Provided(self.root, name)

        self.run(provide())
        self.root_services[name] = list(self.root.fiber._effects)[-1]
        self.settle()

    @precondition(lambda self: bool(self.root_services))
    @rule(data=st.data())
    def withdraw_from_root(self, data: st.DataObject) -> None:
        """Withdraw a service the root provided."""
        name = data.draw(st.sampled_from(sorted(self.root_services)))
        effect = self.root_services.pop(name)

        async def withdraw() -> None:
            effect()

        self.run(withdraw())
        self.settle()

    @rule()
    def emit(self) -> None:
        """Dispatch to every live listener (async ones become tasks of their plugins)."""

        async def emit() -> None:
            self.root.emit(TICK)

        self.run(emit())
        self.settle()

    # --------------------------------------------------------------- invariants
    @invariant()
    def dependencies_hold(self) -> None:
        runtime = self.root.runtime
        for fiber in self.alive():
            satisfied = runtime.satisfied(fiber.inject)
            if fiber.state is FiberState.ACTIVE:
                assert satisfied, f"{fiber} is active without {fiber.inject}"
            elif fiber.state is FiberState.PENDING and fiber.parent is not None and fiber.parent.alive:
                assert not satisfied, f"{fiber} waits though {fiber.inject} exist"

    @invariant()
    def only_live_plugins_hold_services_and_listeners(self) -> None:
        runtime = self.root.runtime
        for provision in runtime.services.values():
            assert provision.fiber.state is FiberState.ACTIVE, provision
        for entries in runtime.listeners.values():
            for entry in entries:
                assert entry.ctx.fiber.state is FiberState.ACTIVE, entry

    @invariant()
    def disposed_plugins_hold_nothing(self) -> None:
        for fiber in self.fibers:
            if fiber.state in (FiberState.DISPOSED, FiberState.FAILED, FiberState.PENDING):
                assert fiber.effect_count == 0, fiber
                assert fiber.task_count == 0, fiber

    def teardown(self) -> None:
        try:
            self.run(self.root.dispose())  # Context.dispose is a coroutine: it runs inside the loop
            assert leftovers(self.root, self.fibers) == []
            assert self.root.fiber.state is FiberState.DISPOSED
            stray = asyncio.all_tasks(self.loop)
            assert not stray, stray
        finally:
            self.loop.close()


KernelMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_random_plugin_life_cycles_leave_nothing_behind = KernelMachine.TestCase
