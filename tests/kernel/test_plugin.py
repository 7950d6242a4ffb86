"""The four plugin forms: class, function, module, object (SPEC §1.1, §16 postmortem)."""

from __future__ import annotations

import types
from typing import Any

import pytest
from pydantic import BaseModel

from dsh.kernel import Context, FiberState, KernelError, PluginSpec, ServiceKey, describe
from tests.kernel.helpers import REGISTRY, Registry, ticks


class Options(BaseModel):
    level: int = 1


async def test_a_class_plugin_is_constructed_with_ctx_and_config() -> None:
    """Class attributes name, inject and Config are honored; the instance is kept."""
    root = Context()

    class Widget:
        name = "widget"
        inject = ("registry",)
        Config = Options

        def __init__(self, ctx: Context, config: Options) -> None:
            self.ctx = ctx
            self.config = config
            ctx[REGISTRY].add("widget")

    await root.plugin(Registry)
    fiber = await root.plugin(Widget, {"level": 3})
    await ticks()
    assert fiber.name == "widget"
    assert isinstance(fiber.instance, Widget)
    assert fiber.instance.config == Options(level=3)
    assert fiber.instance.ctx is fiber.ctx


async def test_a_function_plugin_may_carry_inject_config_and_name_attributes() -> None:
    """The attributes are read from the function object."""
    root = Context()
    seen: list[Any] = []

    def setup(ctx: Context, config: Options) -> None:
        seen.append((ctx[REGISTRY], config))

    setup.inject = [REGISTRY]  # type: ignore[attr-defined]
    setup.Config = Options  # type: ignore[attr-defined]
    setup.name = "set-up"  # type: ignore[attr-defined]
    fiber = await root.plugin(setup, {"level": 2})
    assert fiber.state is FiberState.PENDING
    await root.plugin(Registry)
    await ticks()
    assert fiber.name == "set-up"
    assert seen == [(root.get(REGISTRY), Options(level=2))]


async def test_a_function_plugin_without_attributes_is_named_after_the_function() -> None:
    """No name attribute: __name__."""
    info = describe(lambda ctx, config: None)
    assert info.name == "<lambda>"
    assert info.inject == ()
    assert info.config_model is None


async def test_a_module_plugin_is_built_from_its_namespace_never_from_a_stray_default_callable() -> None:
    """The §16 postmortem: a module also exporting `default` keeps its inject and Config."""
    root = Context()
    module = types.ModuleType("dsh_test_module_plugin")
    applied: list[Any] = []

    def apply(ctx: Context, config: Options) -> None:
        applied.append((ctx[REGISTRY], config))

    def default(ctx: Context, config: Any) -> None:
        raise AssertionError("the stray default callable must never be used")

    module.name = "module-plugin"  # type: ignore[attr-defined]
    module.inject = ["registry"]  # type: ignore[attr-defined]
    module.Config = Options  # type: ignore[attr-defined]
    module.apply = apply  # type: ignore[attr-defined]
    module.default = default  # type: ignore[attr-defined]
    info = describe(module)
    assert (info.name, info.inject, info.config_model, info.start) == ("module-plugin", ("registry",), Options, apply)
    await root.plugin(Registry)
    fiber = await root.plugin(module, {"level": 5})
    assert fiber.state is FiberState.ACTIVE
    assert applied == [(root.get(REGISTRY), Options(level=5))]


async def test_an_object_plugin_with_apply_and_a_plugin_spec() -> None:
    """Any object with apply works; PluginSpec is the ready-made one."""
    root = Context()

    class Bridge:
        name = "bridge"
        inject = (ServiceKey("registry"),)

        def __init__(self) -> None:
            self.calls: list[Context] = []

        def apply(self, ctx: Context, config: Any) -> str:
            self.calls.append(ctx)
            return "applied"

    bridge = Bridge()
    await root.plugin(Registry)
    fiber = await root.plugin(bridge)
    assert fiber.name == "bridge"
    assert fiber.inject == ("registry",)
    assert fiber.instance == "applied"
    assert bridge.calls == [fiber.ctx]

    spec = PluginSpec(name="spec", apply=lambda ctx, config: config, inject=[REGISTRY], Config=Options)
    info = describe(spec)
    assert (info.name, info.inject, info.config_model) == ("spec", ("registry",), Options)
    nameless = types.SimpleNamespace(apply=lambda ctx, config: None)
    assert describe(nameless).name == "SimpleNamespace"


async def test_malformed_plugins_are_refused_with_the_fix() -> None:
    """Bad inject, bad Config, a module without apply, or no plugin at all."""
    with pytest.raises(KernelError, match="inject must be a list of service names"):
        describe(PluginSpec(name="p", apply=lambda ctx, config: None, inject="registry"))
    with pytest.raises(KernelError, match="inject must be a list of service names"):
        describe(PluginSpec(name="p", apply=lambda ctx, config: None, inject=42))  # type: ignore[arg-type]
    with pytest.raises(KernelError, match="Config must be a pydantic model class"):
        describe(PluginSpec(name="p", apply=lambda ctx, config: None, Config=dict))  # type: ignore[arg-type]
    empty = types.ModuleType("dsh_test_empty_module")
    with pytest.raises(KernelError, match='plugin "dsh_test_empty_module" has no callable apply'):
        describe(empty)
    with pytest.raises(KernelError, match="not a plugin: 42"):
        describe(42)
    root = Context()
    with pytest.raises(KernelError, match="not a plugin"):
        root.plugin("registry")
    assert root.fiber.effect_count == 0
