"""Services, typed keys, handles and caller attribution (SPEC §1.2)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncGenerator, Callable, Generator
from typing import Any

import pytest

from dsh.kernel import (
    Context,
    Disposer,
    EmitEvent,
    Fiber,
    FiberState,
    KernelError,
    PluginSpec,
    Service,
    ServiceHandle,
    ServiceKey,
    unwrap,
)
from dsh.kernel.current import current_context
from tests.kernel.helpers import REGISTRY, Registry, leftovers, ticks

CHANGED: EmitEvent[[str]] = EmitEvent("test/registry-change")


class Forwarder(Service):
    """Service A: reaches the registry (service B) through its caller's context at call time."""

    def __init__(self, ctx: Context, config: object = None) -> None:
        super().__init__(ctx, "forwarder")

    def forward(self, item: object) -> object:
        return self.ctx[REGISTRY].add(item)

    async def forward_later(self, item: object) -> object:
        await asyncio.sleep(0)
        return self.ctx[REGISTRY].add(item)

    async def stream(self, items: list[object]) -> AsyncGenerator[object, None]:
        for item in items:
            await asyncio.sleep(0)
            self.ctx[REGISTRY].add(item)
            yield current_context.get()


FORWARDER: ServiceKey[Forwarder] = ServiceKey("forwarder")


class Announcing(Service):
    """A registry whose registration emits a change event: the rollback test subject."""

    def __init__(self, ctx: Context, config: object = None) -> None:
        super().__init__(ctx, "announcing")
        self.names: set[str] = set()

    def register(self, name: str) -> object:
        def body() -> Generator[Disposer, None, None]:
            if name in self.names:
                raise KernelError(f'"{name}" is already registered')
            self.names.add(name)
            yield lambda: self.names.discard(name)
            self.ctx.emit(CHANGED, name)

        return self.ctx.effect(body, f"name {name}")


ANNOUNCING: ServiceKey[Announcing] = ServiceKey("announcing")


async def plugin(root: Context, name: str, inject: list[str] | None = None) -> Fiber:
    return await root.plugin(PluginSpec(name=name, apply=lambda ctx, _c: None, inject=inject or []))


# ------------------------------------------------------------------- visibility
async def test_a_service_is_visible_only_while_its_fiber_is_active() -> None:
    """During its apply a service is not yet visible; after disposal it reads as None."""
    root = Context()
    seen_during_apply: list[object] = []

    class Store(Registry):
        def __init__(self, ctx: Context, config: object = None) -> None:
            super().__init__(ctx)
            seen_during_apply.append(ctx.get(REGISTRY))

    fiber = await root.plugin(Store)
    assert seen_during_apply == [None]
    assert root.get(REGISTRY) == fiber.instance
    await fiber.dispose()
    assert root.get(REGISTRY) is None
    assert leftovers(root, [fiber]) == []


async def test_ctx_get_returns_none_when_the_service_is_absent() -> None:
    """get never raises and ignores inject."""
    root = Context()
    ctx = (await plugin(root, "reader")).ctx
    assert root.get(REGISTRY) is None
    assert ctx.get(REGISTRY) is None
    await root.plugin(Registry)
    assert isinstance(ctx.get(REGISTRY), Registry)


async def test_ctx_item_without_inject_raises_a_clear_error() -> None:
    """ctx[KEY] names the plugin, the service and the fix when inject lacks the key."""
    root = Context()
    await root.plugin(Registry)
    ctx = (await plugin(root, "sloppy")).ctx
    with pytest.raises(
        KernelError, match='plugin "sloppy" uses service "registry" without declaring it: add "registry"'
    ):
        ctx[REGISTRY]


async def test_ctx_item_for_a_missing_service_raises_a_clear_error() -> None:
    """The root context skips the inject check but still needs the service to exist."""
    root = Context()
    with pytest.raises(KernelError, match='service "registry" is not available'):
        root[REGISTRY]


async def test_a_service_reads_itself_without_declaring_it() -> None:
    """A plugin may reach the service it provides without listing it in inject."""
    root = Context()

    class SelfAware(Registry):
        def look(self) -> object:
            return self.own_ctx.fiber.ctx[REGISTRY]

    fiber = await root.plugin(SelfAware)
    assert fiber.instance.look() == fiber.instance


async def test_handles_look_like_the_service() -> None:
    """isinstance holds, unwrap returns the object, equality and hashing follow the service."""
    root = Context()
    fiber = await root.plugin(Registry)
    service = fiber.instance
    handle = root[REGISTRY]
    assert isinstance(handle, Registry)
    assert type(handle) is ServiceHandle
    assert unwrap(handle) is service
    assert unwrap(service) is service
    assert handle == service
    assert handle == root.get(REGISTRY)
    assert handle != "registry"
    assert hash(handle) == id(service)
    assert handle.service_name == "registry"
    handle.items = ["replaced"]
    assert service.items == ["replaced"]
    assert "handle of" in repr(handle)
    assert root.get(REGISTRY) is handle


async def test_service_keys_compare_by_name() -> None:
    """Two keys with one name find the same service; YAML and inject use the name."""
    assert ServiceKey("llm") == ServiceKey("llm")
    assert ServiceKey("llm") != ServiceKey("tools")
    assert ServiceKey("llm") != "llm"
    assert hash(ServiceKey("llm")) == hash(ServiceKey("llm"))
    assert repr(ServiceKey("llm")) == "ServiceKey('llm')"


async def test_an_untyped_key_finds_a_service_by_name() -> None:
    """context.key(name) is ServiceKey(name) without a type, for ad-hoc services."""
    from dsh.kernel.context import key

    root = Context()
    fiber = await root.plugin(Registry)
    assert key("registry") == REGISTRY
    assert root.get(key("registry")) == fiber.instance


async def test_one_provider_per_service_name() -> None:
    """A second provider fails naming the first; once the first is gone the name is free."""
    root = Context()
    first = await root.plugin(Registry)
    with pytest.raises(KernelError, match='service "registry" is already provided by plugin "Registry"'):
        await root.plugin(Registry)
    await first.dispose()
    second = await root.plugin(Registry)
    assert root.get(REGISTRY) == second.instance


# ------------------------------------------------------------- caller attribution
async def test_effects_a_service_creates_for_a_caller_belong_to_the_caller() -> None:
    """The unload test: disposing the calling plugin undoes its registrations, the service stays."""
    root = Context()
    provider = await root.plugin(Registry)
    registry = provider.instance
    caller = await plugin(root, "caller", ["registry"])
    caller.ctx[REGISTRY].add("tool")
    assert registry.items == ["tool"]
    assert caller.effect_count == 1
    assert provider.effect_count == 1  # only the service registration itself
    await caller.dispose()
    assert registry.items == []
    assert provider.state is FiberState.ACTIVE
    await root.dispose()
    assert leftovers(root, [provider, caller]) == []


async def test_effects_a_service_creates_in_its_own_constructor_belong_to_the_service() -> None:
    """Nobody called through a handle: the service's own fiber owns them."""
    root = Context()

    class Listening(Registry):
        def __init__(self, ctx: Context, config: object = None) -> None:
            super().__init__(ctx)
            self.ctx.on(CHANGED, lambda _n: None)

    fiber = await root.plugin(Listening)
    assert fiber.effect_count == 2
    assert fiber.instance.ctx.fiber is fiber
    assert fiber.instance.own_ctx.fiber is fiber


async def test_attribution_is_transitive_through_services() -> None:
    """P calls A through a handle, A calls B: the effect B creates is owned by P."""
    root = Context()
    await root.plugin(Registry)
    forwarder = await root.plugin(Forwarder)
    caller = await plugin(root, "caller", ["forwarder"])
    caller.ctx[FORWARDER].forward("via forwarder")
    registry = unwrap(root[REGISTRY])
    assert registry.items == ["via forwarder"]
    assert caller.effect_count == 1
    assert forwarder.effect_count == 1
    await caller.dispose()
    assert registry.items == []


async def test_attribution_holds_for_async_methods() -> None:
    """The body of an async method runs on behalf of the caller while it is awaited."""
    root = Context()
    await root.plugin(Registry)
    await root.plugin(Forwarder)
    caller = await plugin(root, "caller", ["forwarder"])
    await caller.ctx[FORWARDER].forward_later("later")
    assert caller.effect_count == 1
    await caller.dispose()
    assert unwrap(root[REGISTRY]).items == []


async def test_attribution_holds_for_async_generator_methods() -> None:
    """Each step of an async generator method runs on behalf of the caller; aclose works."""
    root = Context()
    await root.plugin(Registry)
    await root.plugin(Forwarder)
    caller = await plugin(root, "caller", ["forwarder"])
    stream = caller.ctx[FORWARDER].stream(["a", "b", "c"])
    assert stream.__aiter__() is stream
    seen = [await stream.__anext__(), await stream.asend(None)]
    assert [type(item) for item in seen] == [Context, Context]
    assert all(item.fiber is caller for item in seen)  # type: ignore[attr-defined]
    assert current_context.get() is None
    with pytest.raises(ValueError, match="stop"):
        await stream.athrow(ValueError("stop"))
    await stream.aclose()
    assert caller.effect_count == 2
    await caller.dispose()
    assert unwrap(root[REGISTRY]).items == []


async def test_a_stream_iterated_by_its_callers_own_code_steps_the_generator_without_a_wrapper() -> None:
    """(extra) iterated on behalf of the caller's fiber (any of its contexts), a step is the generator's own
    step; iterated on behalf of another fiber, each step is switched to the caller. Attribution is the same."""
    root = Context()
    await root.plugin(Registry)
    await root.plugin(Forwarder)
    caller = await plugin(root, "caller", ["forwarder"])
    other = await plugin(root, "other")
    handle = caller.ctx[FORWARDER]

    async def consume(items: list[object]) -> tuple[list[bool], list[object]]:
        stream = handle.stream(items)
        wrapped: list[bool] = []
        seen: list[object] = []
        while True:
            step = stream.__anext__()
            wrapped.append(inspect.iscoroutine(step))
            try:
                seen.append(await step)
            except StopAsyncIteration:
                return wrapped, seen

    own_wrapped, own_seen = await caller.ctx.lenient.spawn(consume(["a", "b"]))
    other_wrapped, other_seen = await other.ctx.spawn(consume(["c"]))

    assert own_wrapped == [False, False, False]
    assert other_wrapped == [True, True]
    assert all(item.fiber is caller for item in [*own_seen, *other_seen])  # type: ignore[attr-defined]
    assert unwrap(root[REGISTRY]).items == ["a", "b", "c"]
    assert caller.effect_count == 3
    assert other.effect_count == 0
    await caller.dispose()
    assert unwrap(root[REGISTRY]).items == []


async def test_a_handle_captured_in_a_constructor_acts_for_the_service_itself() -> None:
    """Why services must look others up at call time: a captured handle re-attributes calls."""
    root = Context()
    await root.plugin(Registry)

    class Eager(Service):
        inject = ("registry",)

        def __init__(self, ctx: Context, config: object = None) -> None:
            super().__init__(ctx, "eager")
            self.registry = ctx[REGISTRY]

        def add(self, item: object) -> object:
            return self.registry.add(item)

    eager = await root.plugin(Eager)
    caller = await plugin(root, "caller", ["eager"])
    caller.ctx[ServiceKey[Eager]("eager")].add("misattributed")
    assert caller.effect_count == 0
    assert eager.effect_count == 2


async def test_a_service_sees_the_caller_through_self_ctx_and_ignores_inject() -> None:
    """Inside a method self.ctx is the caller's context without the inject check."""
    root = Context()
    await root.plugin(Registry)
    seen: list[Context] = []

    class Probe(Service):
        def __init__(self, ctx: Context, config: object = None) -> None:
            super().__init__(ctx, "probe")

        def look(self) -> object:
            seen.append(self.ctx)
            return self.ctx[REGISTRY]

    await root.plugin(Probe)
    caller = await plugin(root, "caller", ["probe"])
    assert caller.ctx[ServiceKey[Probe]("probe")].look() == root.get(REGISTRY)
    assert seen[0].fiber is caller


async def test_a_throwing_change_listener_leaves_nothing_behind_and_the_name_stays_reusable() -> None:
    """The rollback test for the service registry: a throwing change listener leaves nothing behind."""
    root = Context()
    announcing = await root.plugin(Announcing)
    caller = await plugin(root, "caller", ["announcing"])
    failures: list[str] = []

    def throwing(name: str) -> None:
        failures.append(name)
        raise RuntimeError("listener rejected it")

    off = root.on(CHANGED, throwing)
    with pytest.raises(RuntimeError, match="listener rejected it"):
        caller.ctx[ANNOUNCING].register("alpha")
    assert announcing.instance.names == set()
    assert caller.effect_count == 0
    off()
    registered = caller.ctx[ANNOUNCING].register("alpha")
    assert announcing.instance.names == {"alpha"}
    assert failures == ["alpha"]
    assert callable(registered)
    await caller.dispose()
    assert announcing.instance.names == set()


async def test_a_class_plugin_that_raises_after_providing_leaves_the_name_free() -> None:
    """The service registry rollback: a constructor raising after super().__init__ withdraws it."""
    root = Context()

    class Broken(Registry):
        def __init__(self, ctx: Context, config: object = None) -> None:
            super().__init__(ctx)
            raise ValueError("constructor failed")

    with pytest.raises(ValueError, match="constructor failed"):
        await root.plugin(Broken)
    assert root.runtime.services == {}
    fiber = await root.plugin(Registry)
    assert root.get(REGISTRY) == fiber.instance


async def test_a_service_method_called_through_a_handle_restores_the_previous_caller() -> None:
    """The current caller is set for the call only."""
    root = Context()
    fiber = await root.plugin(Registry)
    caller = await plugin(root, "caller", ["registry"])
    outer: list[object] = []

    def apply_like() -> None:
        caller.ctx[REGISTRY].add("x")
        outer.append(current_context.get())

    token = current_context.set(fiber.ctx)
    try:
        apply_like()
    finally:
        current_context.reset(token)
    assert outer == [fiber.ctx]


async def test_plain_attributes_and_non_methods_pass_through_the_handle() -> None:
    """Only bound methods of the service are wrapped; other callables come back as they are."""
    root = Context()

    class WithCallable(Registry):
        def __init__(self, ctx: Context, config: object = None) -> None:
            super().__init__(ctx)
            self.factory: Callable[[], Any] = lambda: current_context.get()

    await root.plugin(WithCallable)
    handle = root[REGISTRY]
    assert handle.factory() is None  # type: ignore[attr-defined]
    assert handle.items == []
    await ticks(1)
