"""``repeat-guard``: an advisory note to a model that keeps making the same tool call.

A module plugin (``dsh.plugins.repeat_guard``, YAML name ``repeat-guard``); config
``threshold`` (default 3). It needs ``tools`` and ``agents`` and works only through
their extension points (``tools/execute``, ``agent/turn-start``, ``agent/disposed``);
see :mod:`dsh.plugins.repeat_guard.guard`. Unloading it removes its listeners.
"""

from __future__ import annotations

from dsh.core.agent import AGENTS
from dsh.core.tools import TOOLS
from dsh.kernel import Context
from dsh.plugins.repeat_guard.guard import (
    PLUGIN_NAME,
    PREVIEW_CHARS,
    SOURCE,
    RepeatGuard,
    RepeatGuardConfig,
    canonical_arguments,
    repeat_note,
)

name = PLUGIN_NAME
inject = [TOOLS.name, AGENTS.name]
Config = RepeatGuardConfig


def apply(ctx: Context, config: RepeatGuardConfig) -> RepeatGuard:
    """Start counting on behalf of ``ctx``'s fiber."""
    return RepeatGuard(ctx, config.threshold)


__all__ = [
    "PLUGIN_NAME",
    "PREVIEW_CHARS",
    "SOURCE",
    "Config",
    "RepeatGuard",
    "RepeatGuardConfig",
    "apply",
    "canonical_arguments",
    "inject",
    "name",
    "repeat_note",
]
