"""The dsh kernel: contexts, fibers, services, effects, events, cancellation, config, loader.

It imports nothing else of dsh. See ``docs/architecture.md`` for the contracts.
"""

from dsh.kernel.abort import AbortController, AbortError, AbortSignal, aborted_signal
from dsh.kernel.config import (
    ConfigError,
    ConfigPath,
    KernelError,
    escape_path,
    expand_config_path,
    expand_path,
    validate_config,
)
from dsh.kernel.context import Context
from dsh.kernel.effects import Disposer, Effect, EffectBody
from dsh.kernel.events import (
    BailEvent,
    EmitEvent,
    EventDescriptor,
    ParallelEvent,
    SerialEvent,
    WaterfallEvent,
)
from dsh.kernel.fiber import Fiber, FiberState
from dsh.kernel.loader import (
    IncludeConfig,
    LoaderError,
    PluginEntry,
    include,
    load_entries,
    load_tree,
    parse_tree,
    resolve_plugin,
)
from dsh.kernel.logger import Logger
from dsh.kernel.plugin import PluginInfo, PluginSpec, describe
from dsh.kernel.service import Service, ServiceHandle, ServiceKey, unwrap
from dsh.kernel.timer import Timer, TimerHandle

__all__ = [
    "AbortController",
    "AbortError",
    "AbortSignal",
    "BailEvent",
    "ConfigError",
    "ConfigPath",
    "Context",
    "Disposer",
    "Effect",
    "EffectBody",
    "EmitEvent",
    "EventDescriptor",
    "Fiber",
    "FiberState",
    "IncludeConfig",
    "KernelError",
    "LoaderError",
    "Logger",
    "ParallelEvent",
    "PluginEntry",
    "PluginInfo",
    "PluginSpec",
    "SerialEvent",
    "Service",
    "ServiceHandle",
    "ServiceKey",
    "Timer",
    "TimerHandle",
    "WaterfallEvent",
    "aborted_signal",
    "describe",
    "escape_path",
    "expand_config_path",
    "expand_path",
    "include",
    "load_entries",
    "load_tree",
    "parse_tree",
    "resolve_plugin",
    "unwrap",
    "validate_config",
]
