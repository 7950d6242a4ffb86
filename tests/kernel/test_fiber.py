"""Fibers: loading, config, inject, disposal to quiescence (SPEC §1.1)."""

from __future__ import annotations

import asyncio
import logging
import sys
import types
from typing import Any

import pytest
from pydantic import BaseModel, Field

from dsh.kernel import ConfigError, Context, Fiber, FiberState, KernelError, PluginSpec, Service
from dsh.kernel.current import current_context
from tests.kernel.helpers import PING, REGISTRY, Registry, leftovers, ticks


def noop(ctx: Context, config: Any) -> None:
    return None


class Settings(BaseModel):
    model_config = {"extra": "forbid"}

    url: str
    retries: int = 3
    tags: list[str] = Field(default_factory=list)


# --------------------------------------------------------------------- loading
async def test_apply_runs_on_a_later_tick_and_awaiting_returns_the_active_fiber() -> None:
    """ctx.plugin returns at once; apply runs afterwards; the awaited value is the fiber."""
    root = Context()
    calls: list[Context] = []
    fiber = root.plugin(PluginSpec(name="late", apply=lambda ctx, _config: calls.append(ctx)))
    assert calls == []
    assert fiber.state is FiberState.PENDING
    assert await fiber is fiber
    assert calls == [fiber.ctx]
    assert fiber.state is FiberState.ACTIVE
    assert fiber.parent is root.fiber
    assert fiber.name == "late"
    assert repr(fiber) == "<Fiber late active>"
    assert repr(fiber.ctx) == "<Context of late>"


async def test_an_awaitable_returned_by_apply_is_awaited_before_the_fiber_is_active() -> None:
    """The fiber becomes ACTIVE only when apply's awaitable resolves; its value is the instance."""
    root = Context()
    gate = asyncio.Event()

    async def apply(ctx: Context, config: Any) -> str:
        await gate.wait()
        return "instance"

    fiber = root.plugin(PluginSpec(name="slow", apply=apply))
    await ticks()
    assert fiber.state is FiberState.LOADING
    gate.set()
    await fiber
    assert fiber.state is FiberState.ACTIVE
    assert fiber.instance == "instance"


async def test_the_plugin_receives_its_validated_config_with_defaults() -> None:
    """A Config model validates the raw mapping and fills defaults before apply."""
    root = Context()
    fiber = await root.plugin(PluginSpec(name="cfg", apply=lambda ctx, config: config, Config=Settings), {"url": "x"})
    assert fiber.config == Settings(url="x", retries=3, tags=[])
    assert fiber.instance is fiber.config


async def test_a_plugin_without_config_model_receives_the_raw_mapping() -> None:
    """No Config: the raw mapping is passed through, None becomes {}."""
    root = Context()
    raw = {"anything": [1, 2]}
    fiber = await root.plugin(PluginSpec(name="raw", apply=lambda ctx, config: config), raw)
    assert fiber.instance is raw
    empty = await root.plugin(PluginSpec(name="none", apply=lambda ctx, config: config))
    assert empty.instance == {}


async def test_an_invalid_config_rejects_the_load_listing_every_field_path() -> None:
    """Every failing field is named, and the plugin never starts."""
    root = Context()
    started: list[bool] = []
    spec = PluginSpec(name="strict", apply=lambda ctx, config: started.append(True), Config=Settings)
    fiber = root.plugin(spec, {"retries": "many", "tags": ["ok", 3], "colour": "red"})
    with pytest.raises(ConfigError) as caught:
        await fiber
    message = str(caught.value)
    for path in ("url", "retries", "tags.1", "colour"):
        assert f"{path}:" in message
    assert message.startswith('plugin "strict": invalid config: ')
    assert "fix these fields" in message
    assert {path for path, _ in caught.value.problems} == {"url", "retries", "tags.1", "colour"}
    assert started == []
    assert fiber.state is FiberState.FAILED
    assert fiber.error is caught.value


async def test_a_raising_apply_rejects_the_load_and_rolls_back_its_effects() -> None:
    """Listeners, services and children created before the raise are all undone."""
    root = Context()
    child_box: list[Fiber] = []

    def apply(ctx: Context, config: Any) -> None:
        ctx.on(PING, lambda _t: None)
        Registry(ctx)
        child_box.append(ctx.plugin(PluginSpec(name="child", apply=noop)))
        raise RuntimeError("apply failed")

    fiber = root.plugin(PluginSpec(name="broken", apply=apply))
    with pytest.raises(RuntimeError, match="apply failed"):
        await fiber
    assert fiber.state is FiberState.FAILED
    assert root.listener_count(PING) == 0
    assert root.get(REGISTRY) is None
    assert child_box[0].state is FiberState.DISPOSED
    await fiber.dispose()
    assert leftovers(root, [fiber, *child_box]) == []


async def test_an_async_apply_that_raises_rejects_after_rolling_back() -> None:
    """The same holds when the failure comes after an await."""
    root = Context()

    async def apply(ctx: Context, config: Any) -> None:
        ctx.on(PING, lambda _t: None)
        await asyncio.sleep(0)
        raise ValueError("late failure")

    with pytest.raises(ValueError, match="late failure"):
        await root.plugin(PluginSpec(name="late-broken", apply=apply))
    assert root.listener_count(PING) == 0


# ---------------------------------------------------------------------- inject
async def test_a_plugin_with_an_unmet_inject_stays_pending_and_the_load_still_resolves() -> None:
    """Awaiting resolves at once; apply has not run."""
    root = Context()
    runs: list[str] = []
    fiber = await root.plugin(
        PluginSpec(name="needs", apply=lambda ctx, _c: runs.append("applied"), inject=["registry"])
    )
    assert fiber.state is FiberState.PENDING
    assert runs == []


async def test_a_pending_plugin_starts_when_the_service_appears_unloads_when_it_goes_and_returns() -> None:
    """The whole dependency life cycle, with the dependent's effects undone on each unload."""
    root = Context()
    applied: list[int] = []

    def apply(ctx: Context, config: Any) -> None:
        applied.append(len(applied) + 1)
        ctx[REGISTRY].add(f"run {len(applied)}")
        ctx.on(PING, lambda _t: None)

    dependent = await root.plugin(PluginSpec(name="dependent", apply=apply, inject=[REGISTRY]))
    assert dependent.state is FiberState.PENDING

    provider = await root.plugin(Registry)
    await ticks()
    assert dependent.state is FiberState.ACTIVE
    assert applied == [1]
    registry = provider.instance
    assert registry.items == ["run 1"]
    assert root.listener_count(PING) == 1

    await provider.dispose()
    assert dependent.state is FiberState.PENDING
    assert root.listener_count(PING) == 0
    assert registry.items == []

    again = await root.plugin(Registry)
    await ticks()
    assert dependent.state is FiberState.ACTIVE
    assert applied == [1, 2]
    assert again.instance.items == ["run 2"]

    await root.dispose()
    assert leftovers(root, [dependent, provider, again]) == []


async def test_a_service_provided_directly_on_the_root_starts_pending_dependents() -> None:
    """A provider that is already ACTIVE (the root) wakes dependents at once; withdrawing unloads them."""
    root = Context()
    dependent = await root.plugin(PluginSpec(name="dependent", apply=noop, inject=["registry"]))
    registry = Registry(root)
    await ticks()
    assert dependent.state is FiberState.ACTIVE
    assert root.get(REGISTRY) == registry
    provision = next(effect for effect in list(root.fiber._effects) if effect.label == "service registry")
    provision()
    await ticks()
    assert dependent.state is FiberState.PENDING
    assert root.get(REGISTRY) is None
    await root.dispose()
    assert leftovers(root, [dependent]) == []


async def test_losing_a_service_while_applying_unloads_the_plugin_once_it_is_active() -> None:
    """A dependency that vanishes during a slow apply is noticed when the apply ends."""
    root = Context()
    provider = await root.plugin(Registry)
    gate = asyncio.Event()

    async def apply(ctx: Context, config: Any) -> None:
        await gate.wait()

    dependent = root.plugin(PluginSpec(name="slow", apply=apply, inject=["registry"]))
    await ticks()
    assert dependent.state is FiberState.LOADING
    await provider.dispose()
    gate.set()
    await dependent
    await ticks()
    assert dependent.state is FiberState.PENDING
    await root.dispose()


async def test_dependents_unload_before_their_provider_is_torn_down() -> None:
    """Disposing a provider awaits its dependents' unload, transitively, before its own effects go."""
    root = Context()
    order: list[str] = []

    class First(Service):
        def __init__(self, ctx: Context, config: Any) -> None:
            super().__init__(ctx, "first")
            ctx.effect(lambda: lambda: order.append("first withdrawn"))

    class Second(Service):
        inject = ("first",)

        def __init__(self, ctx: Context, config: Any) -> None:
            super().__init__(ctx, "second")
            ctx.effect(lambda: lambda: order.append("second withdrawn"))

    def third(ctx: Context, config: Any) -> None:
        ctx.effect(lambda: lambda: order.append("third unloaded"))

    third.inject = ["second"]  # type: ignore[attr-defined]
    first = await root.plugin(First)
    second = await root.plugin(Second)
    dependent = await root.plugin(third)
    await ticks()
    assert dependent.state is FiberState.ACTIVE
    await first.dispose()
    assert order == ["third unloaded", "second withdrawn", "first withdrawn"]
    assert second.state is FiberState.PENDING
    assert dependent.state is FiberState.PENDING
    await root.dispose()
    assert leftovers(root, [first, second, dependent]) == []


async def test_ctx_inject_runs_the_callback_in_a_child_fiber_once_the_services_exist() -> None:
    """ctx.inject(names, callback) is a small plugin that waits for its services."""
    root = Context()
    seen: list[object] = []
    fiber = root.inject([REGISTRY], lambda ctx: seen.append(ctx[REGISTRY]))
    await fiber
    assert seen == []
    registry = Registry(root)
    await ticks()
    assert seen == [registry]
    assert fiber.name == "root/inject"
    await fiber.dispose()
    assert fiber.state is FiberState.DISPOSED


async def test_a_failing_re_apply_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """The first load already resolved, so a later apply failure can only be logged."""
    root = Context()
    runs: list[int] = []

    def apply(ctx: Context, config: Any) -> None:
        runs.append(1)
        if len(runs) == 2:
            raise RuntimeError("second apply failed")

    dependent = await root.plugin(PluginSpec(name="flaky", apply=apply, inject=["registry"]))
    provider = await root.plugin(Registry)
    await ticks()
    await provider.dispose()
    with caplog.at_level(logging.ERROR, logger="dsh.kernel"):
        await root.plugin(Registry)
        await ticks()
    assert dependent.state is FiberState.FAILED
    assert any("flaky failed to re-apply" in record.getMessage() for record in caplog.records)
    await root.dispose()


# -------------------------------------------------------------------- disposal
async def test_disposal_starts_effects_last_first_and_awaits_async_disposers() -> None:
    """LIFO order, async disposers awaited before dispose returns."""
    root = Context()
    order: list[str] = []
    gate = asyncio.Event()

    async def slow_undo() -> None:
        await gate.wait()
        order.append("async undone")

    def apply(ctx: Context, config: Any) -> None:
        ctx.effect(lambda: lambda: order.append("first"))
        ctx.effect(lambda: slow_undo)
        ctx.effect(lambda: lambda: order.append("third"))

    fiber = await root.plugin(PluginSpec(name="ordered", apply=apply))
    disposing = asyncio.ensure_future(fiber.dispose())
    await ticks()
    assert order == ["third", "first"]
    assert not disposing.done()
    gate.set()
    await disposing
    assert order == ["third", "first", "async undone"]
    assert fiber.state is FiberState.DISPOSED


async def test_disposer_failures_are_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    """dispose() succeeds; the failure is in the log."""
    root = Context()

    def broken() -> None:
        raise RuntimeError("cleanup exploded")

    fiber = await root.plugin(PluginSpec(name="messy", apply=lambda ctx, _c: ctx.effect(lambda: broken)))
    with caplog.at_level(logging.ERROR, logger="dsh.kernel"):
        await fiber.dispose()
    assert fiber.state is FiberState.DISPOSED
    assert any("cleanup exploded" in record.getMessage() for record in caplog.records)


async def test_dispose_returns_only_when_children_dependents_and_tasks_are_quiescent() -> None:
    """Slow child disposers, slow dependent unloads and tasks with slow cleanup all finish first."""
    root = Context()
    done: list[str] = []

    async def slow(label: str) -> None:
        await ticks(3)
        done.append(label)

    def parent_apply(ctx: Context, config: Any) -> None:
        Registry(ctx)
        ctx.plugin(PluginSpec(name="child", apply=lambda c, _c: c.effect(lambda: lambda: slow("child"))))

        async def worker() -> None:
            try:
                await asyncio.Event().wait()
            finally:
                await slow("task")

        ctx.spawn(worker())

    def dependent_apply(ctx: Context, config: Any) -> None:
        ctx.effect(lambda: lambda: slow("dependent"))

    parent = await root.plugin(PluginSpec(name="parent", apply=parent_apply))
    dependent = await root.plugin(PluginSpec(name="dependent", apply=dependent_apply, inject=["registry"]))
    await ticks()
    assert dependent.state is FiberState.ACTIVE
    await parent.dispose()
    assert sorted(done) == ["child", "dependent", "task"]
    assert parent.task_count == 0
    await root.dispose()
    assert leftovers(root, [parent, dependent]) == []


async def test_tasks_spawned_while_disposing_are_cancelled_too() -> None:
    """An async disposer that starts a task does not leave it running."""
    root = Context()
    spawned: list[asyncio.Task[None]] = []

    async def undo(ctx: Context) -> None:
        await asyncio.sleep(0)
        spawned.append(ctx.fiber.spawn(asyncio.Event().wait()))

    fiber = await root.plugin(
        PluginSpec(name="late-spawner", apply=lambda ctx, _c: ctx.effect(lambda: lambda: undo(ctx)))
    )
    await fiber.dispose()
    assert spawned[0].cancelled()
    assert fiber.task_count == 0


async def test_ctx_spawn_tasks_run_on_behalf_of_the_plugin_and_are_cancelled_on_dispose() -> None:
    """A spawned task belongs to the fiber; disposal cancels and awaits it."""
    root = Context()
    fiber = await root.plugin(PluginSpec(name="worker", apply=noop))
    started = asyncio.Event()
    cancelled: list[bool] = []

    async def work() -> object:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return None

    async def who() -> object:
        return current_context.get()

    assert await fiber.ctx.spawn(who(), name="who") is fiber.ctx
    task = fiber.ctx.spawn(work())
    await started.wait()
    assert fiber.task_count == 1
    await fiber.dispose()
    assert task.cancelled()
    assert cancelled == [True]
    assert fiber.task_count == 0


async def test_spawning_on_a_disposed_plugin_is_refused_and_the_coroutine_closed() -> None:
    """Nothing would ever cancel such a task; the coroutine is closed, not leaked."""
    root = Context()
    fiber = await root.plugin(PluginSpec(name="gone", apply=noop))
    await fiber.dispose()

    async def work() -> None:
        raise AssertionError("never runs")

    with pytest.raises(KernelError, match='disposed plugin "gone"'):
        fiber.ctx.spawn(work())


async def test_a_failing_task_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """Nobody awaits a fire-and-forget task, so its failure is logged under dsh.kernel."""
    root = Context()

    async def fails() -> None:
        raise RuntimeError("task exploded")

    with caplog.at_level(logging.ERROR, logger="dsh.kernel"):
        task = root.spawn(fails())
        await asyncio.wait([task])
    assert any("task exploded" in record.getMessage() for record in caplog.records)


async def test_dispose_is_idempotent_and_cancelling_the_caller_does_not_interrupt_it() -> None:
    """Two callers share one teardown; a cancelled waiter leaves it running to completion."""
    root = Context()
    gate = asyncio.Event()
    finished: list[bool] = []

    async def slow_undo() -> None:
        await gate.wait()
        finished.append(True)

    fiber = await root.plugin(PluginSpec(name="slow", apply=lambda ctx, _c: ctx.effect(lambda: slow_undo)))
    waiter = asyncio.ensure_future(fiber.dispose())
    await ticks()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert fiber.state is FiberState.UNLOADING
    gate.set()
    await fiber.dispose()
    await fiber.dispose()
    assert finished == [True]
    assert fiber.state is FiberState.DISPOSED


async def test_disposing_a_plugin_during_its_apply_cancels_the_apply() -> None:
    """An apply still awaiting is cancelled; the load resolves; effects made so far are undone."""
    root = Context()
    cancelled: list[bool] = []

    async def apply(ctx: Context, config: Any) -> None:
        ctx.on(PING, lambda _t: None)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    fiber = root.plugin(PluginSpec(name="interrupted", apply=apply))
    await ticks()
    assert fiber.state is FiberState.LOADING
    await fiber.dispose()
    assert await fiber is fiber
    assert cancelled == [True]
    assert fiber.state is FiberState.DISPOSED
    assert leftovers(root, [fiber]) == []


async def test_an_apply_that_swallows_cancellation_still_ends_disposed() -> None:
    """Even if apply ignores the cancel, the disposal wins and undoes what apply did."""
    root = Context()

    async def apply(ctx: Context, config: Any) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            ctx.on(PING, lambda _t: None)

    fiber = root.plugin(PluginSpec(name="stubborn", apply=apply))
    await ticks()
    await fiber.dispose()
    assert await fiber is fiber
    assert fiber.state is FiberState.DISPOSED
    assert fiber.error is None
    assert root.listener_count(PING) == 0


async def test_disposing_a_pending_plugin_and_a_plugin_that_self_disposes() -> None:
    """A plugin never started disposes cleanly; so does one that disposes itself from apply."""
    root = Context()
    pending = root.plugin(PluginSpec(name="never", apply=noop, inject=["missing"]))
    await pending.dispose()
    assert pending.state is FiberState.DISPOSED

    def suicidal(ctx: Context, config: Any) -> None:
        ctx.fiber.dispose()

    fiber = await root.plugin(PluginSpec(name="suicidal", apply=suicidal))
    await fiber.dispose()
    assert fiber.state is FiberState.DISPOSED
    assert leftovers(root, [pending, fiber]) == []


async def test_a_disposed_child_is_no_longer_an_effect_of_its_parent() -> None:
    """The parent forgets the link, so disposing it later does not touch the child again."""
    root = Context()
    child = await root.plugin(PluginSpec(name="child", apply=noop))
    assert root.fiber.effect_count == 1
    await child.dispose()
    assert root.fiber.effect_count == 0


async def test_a_dependent_being_unloaded_when_disposed_finishes_disposed() -> None:
    """Disposal during a dependency unload waits for it and ends DISPOSED, never PENDING."""
    root = Context()
    gate = asyncio.Event()

    async def slow_undo() -> None:
        await gate.wait()

    provider = await root.plugin(Registry)
    dependent = await root.plugin(
        PluginSpec(name="dep", apply=lambda ctx, _c: ctx.effect(lambda: slow_undo), inject=["registry"])
    )
    await ticks()
    withdrawing = asyncio.ensure_future(provider.dispose())
    await ticks()
    assert dependent.state is FiberState.UNLOADING
    disposing = asyncio.ensure_future(dependent.dispose())
    await ticks()
    gate.set()
    await withdrawing
    await disposing
    assert dependent.state is FiberState.DISPOSED
    assert leftovers(root, [provider, dependent]) == []


async def test_a_module_fiber_name_comes_from_the_module() -> None:
    """The root fiber is called root; plugin fibers take the plugin's name."""
    root = Context()
    assert root.fiber.name == "root"
    assert root.fiber.inject == ()
    module = types.ModuleType("dsh_test_named_module")
    module.apply = noop  # type: ignore[attr-defined]
    fiber = await root.plugin(module)
    assert fiber.name == "dsh_test_named_module"
    assert "dsh_test_named_module" not in sys.modules


async def test_a_service_appearing_before_the_first_boot_starts_the_plugin_once() -> None:
    """Providing the service in the same tick as the load schedules one boot, not two."""
    root = Context()
    runs: list[int] = []
    fiber = root.plugin(PluginSpec(name="eager", apply=lambda ctx, _c: runs.append(1), inject=["registry"]))
    Registry(root)
    await fiber
    await ticks()
    assert fiber.state is FiberState.ACTIVE
    assert runs == [1]


async def test_losing_two_services_at_once_unloads_the_plugin_once() -> None:
    """Two withdrawals in one tick share a single unload."""
    root = Context()
    undone: list[int] = []

    class Other(Registry):
        key = "other"

    Registry(root)
    Other(root)
    fiber = await root.plugin(
        PluginSpec(
            name="both",
            apply=lambda ctx, _c: ctx.effect(lambda: lambda: undone.append(1)),
            inject=["registry", "other"],
        )
    )
    await ticks()
    assert fiber.state is FiberState.ACTIVE
    for effect in [effect for effect in list(root.fiber._effects) if effect.label.startswith("service ")]:
        effect()
    await ticks()
    assert fiber.state is FiberState.PENDING
    assert undone == [1]
    await root.dispose()


async def test_a_service_that_returns_during_the_unload_re_applies_the_plugin() -> None:
    """When the unload ends and the service is back, the plugin boots again."""
    root = Context()
    gate = asyncio.Event()
    runs: list[int] = []

    async def slow_undo() -> None:
        await gate.wait()

    def apply(ctx: Context, config: Any) -> None:
        runs.append(1)
        ctx.effect(lambda: slow_undo)

    Registry(root)
    dependent = await root.plugin(PluginSpec(name="dep", apply=apply, inject=["registry"]))
    await ticks()
    provision = next(effect for effect in list(root.fiber._effects) if effect.label == "service registry")
    provision()
    await ticks()
    assert dependent.state is FiberState.UNLOADING
    Registry(root)
    gate.set()
    await ticks(10)
    assert dependent.state is FiberState.ACTIVE
    assert runs == [1, 1]
    await root.dispose()


async def test_disposing_a_plugin_while_its_failed_apply_rolls_back_keeps_the_failure() -> None:
    """The apply failed before the disposal: the load still rejects, and the fiber ends disposed."""
    root = Context()
    gate = asyncio.Event()

    async def slow_undo() -> None:
        await gate.wait()

    def apply(ctx: Context, config: Any) -> None:
        ctx.effect(lambda: slow_undo)
        raise ValueError("apply failed")

    fiber = root.plugin(PluginSpec(name="failing", apply=apply))
    await ticks()
    assert fiber.state is FiberState.UNLOADING
    disposing = asyncio.ensure_future(fiber.dispose())
    await ticks()
    gate.set()
    await disposing
    with pytest.raises(ValueError, match="apply failed"):
        await fiber
    assert fiber.state is FiberState.DISPOSED
    assert isinstance(fiber.error, ValueError)


async def test_children_and_descendants_list_live_fibers_in_load_order() -> None:
    from dsh.kernel import Context, PluginSpec

    root = Context()
    grandchildren: list[object] = []

    def outer_apply(ctx: Context, _config: object) -> None:
        grandchildren.append(ctx.plugin(PluginSpec(name="inner", apply=lambda _c, _k: None)))

    outer = await root.plugin(PluginSpec(name="outer", apply=outer_apply))
    second = await root.plugin(PluginSpec(name="second", apply=lambda _c, _k: None))
    await grandchildren[0]  # type: ignore[misc]
    assert root.fiber.children == [outer, second]
    assert [f.name for f in root.fiber.descendants()] == ["outer", "inner", "second"]
    await outer.dispose()
    assert root.fiber.children == [second]
    assert [f.name for f in root.fiber.descendants()] == ["second"]
    await root.dispose()
    assert root.fiber.children == []
