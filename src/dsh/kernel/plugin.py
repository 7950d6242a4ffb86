"""What a plugin is, in its four forms (SPEC §1.1).

* a **class** (often a :class:`~dsh.kernel.service.Service`): constructed as
  ``cls(ctx, config)``; optional class attributes ``name``, ``inject``, ``Config``;
* a **function** ``fn(ctx, config)`` that may carry ``inject``/``Config``/``name``
  attributes;
* a **module** exposing ``apply(ctx, config)`` plus optional ``name``, ``inject`` and
  ``Config``; the namespace itself is the plugin, never a stray default callable;
* any other **object** with ``apply`` (for instance :class:`PluginSpec`).

``apply`` may return an awaitable; the fiber becomes ACTIVE once it resolves.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from pydantic import BaseModel

from dsh.kernel.config import KernelError
from dsh.kernel.service import ServiceKey, key_name


@dataclass(frozen=True)
class PluginSpec:
    """An object plugin: a name, the services it needs, an optional config model and ``apply``."""

    name: str
    apply: Callable[..., Any]
    inject: Sequence[str | ServiceKey[Any]] = ()
    Config: type[BaseModel] | None = None


@dataclass(frozen=True)
class PluginInfo:
    """A plugin normalized to what the kernel needs."""

    name: str
    inject: tuple[str, ...]
    config_model: type[BaseModel] | None
    start: Callable[[Any, Any], Any]
    source: object = field(repr=False, default=None)


def _inject_names(raw: object, name: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str | ServiceKey) or not isinstance(raw, Sequence):
        raise KernelError(f'plugin "{name}": inject must be a list of service names, got {raw!r}')
    return tuple(key_name(item) for item in raw)


def _config_model(raw: object, name: str) -> type[BaseModel] | None:
    if raw is None:
        return None
    if inspect.isclass(raw) and issubclass(raw, BaseModel):
        return raw
    raise KernelError(f'plugin "{name}": Config must be a pydantic model class, got {raw!r}')


def describe(plugin: object) -> PluginInfo:
    """Normalize ``plugin`` into a :class:`PluginInfo`; raise KernelError if it is none of the forms."""
    if isinstance(plugin, ModuleType) or (not inspect.isclass(plugin) and hasattr(plugin, "apply")):
        default_name = plugin.__name__ if isinstance(plugin, ModuleType) else type(plugin).__name__
        name = str(getattr(plugin, "name", None) or default_name)
        apply = getattr(plugin, "apply", None)
        if not callable(apply):
            raise KernelError(f'plugin "{name}" has no callable apply(ctx, config)')
        return PluginInfo(
            name=name,
            inject=_inject_names(getattr(plugin, "inject", None), name),
            config_model=_config_model(getattr(plugin, "Config", None), name),
            start=apply,
            source=plugin,
        )
    if callable(plugin):
        declared = getattr(plugin, "name", None)
        name = (
            declared if isinstance(declared, str) and declared else getattr(plugin, "__name__", type(plugin).__name__)
        )
        return PluginInfo(
            name=name,
            inject=_inject_names(getattr(plugin, "inject", None), name),
            config_model=_config_model(getattr(plugin, "Config", None), name),
            start=plugin,
            source=plugin,
        )
    raise KernelError(f"not a plugin: {plugin!r} (expected a class, a function, a module or an object with apply)")
