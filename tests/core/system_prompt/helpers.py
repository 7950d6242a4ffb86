"""Helpers for tests of the prompt and tool services: a stand-in contributing plugin."""

from __future__ import annotations

from dsh.kernel import Context, Fiber, PluginSpec


async def contributor(root: Context, *inject: str, name: str = "contributor") -> Fiber:
    """Load an empty plugin that injects ``inject``; register through ``fiber.ctx``."""
    fiber = await root.plugin(PluginSpec(name=name, apply=lambda _ctx, _config: None, inject=inject))
    assert fiber.ctx.fiber is fiber
    return fiber
