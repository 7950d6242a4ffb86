"""The dsh kernel: contexts, fibers, services, effects, events, cancellation, config.

It imports nothing else of dsh. See ``docs/architecture.md`` for the contracts.
"""

from dsh.kernel.abort import AbortController, AbortError, AbortSignal, aborted_signal
from dsh.kernel.config import ConfigError, KernelError, validate_config
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
from dsh.kernel.logger import Logger
from dsh.kernel.plugin import PluginInfo, PluginSpec, describe
from dsh.kernel.service import Service, ServiceHandle, ServiceKey, unwrap

__all__ = [
    "AbortController",
    "AbortError",
    "AbortSignal",
    "BailEvent",
    "ConfigError",
    "Context",
    "Disposer",
    "Effect",
    "EffectBody",
    "EmitEvent",
    "EventDescriptor",
    "Fiber",
    "FiberState",
    "KernelError",
    "Logger",
    "ParallelEvent",
    "PluginInfo",
    "PluginSpec",
    "SerialEvent",
    "Service",
    "ServiceHandle",
    "ServiceKey",
    "WaterfallEvent",
    "aborted_signal",
    "describe",
    "unwrap",
    "validate_config",
]
