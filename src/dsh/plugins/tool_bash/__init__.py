"""``tool-bash``: the model-facing ``bash``, ``bash_output`` and ``bash_kill`` tools (SPEC §9c).

A module plugin: load ``dsh.plugins.tool_bash`` itself. It needs ``tools`` and
``bash`` and stays pending until an executor (e.g. ``bash-local``) is loaded.
Unloading it unregisters the tools and forgets task owners.
"""

from __future__ import annotations

from dsh.core.bash import BASH
from dsh.core.tools import TOOLS
from dsh.kernel import Context
from dsh.plugins.tool_bash.render import ExitStatus, format_ms, parse_exit_status, render_result, status_line
from dsh.plugins.tool_bash.tools import (
    BASH_DESCRIPTION,
    BASH_PARAMETERS,
    PLUGIN_NAME,
    TASK_PARAMETERS,
    TITLE_CHARS,
    BashTools,
    command_title,
    present_bash_call,
    present_bash_result,
    resolve_workdir,
)

name = PLUGIN_NAME
inject = [TOOLS.name, BASH.name]


def apply(ctx: Context, _config: object) -> BashTools:
    """Register the three tools and the completion notices on behalf of ``ctx``'s fiber."""
    tools = BashTools(ctx[BASH])
    registry = ctx[TOOLS]
    for definition in tools.definitions():
        registry.register(definition)
    tools.bash.on_task_done(tools.notify_owner)
    return tools


__all__ = [
    "BASH_DESCRIPTION",
    "BASH_PARAMETERS",
    "PLUGIN_NAME",
    "TASK_PARAMETERS",
    "TITLE_CHARS",
    "BashTools",
    "ExitStatus",
    "apply",
    "command_title",
    "format_ms",
    "inject",
    "name",
    "parse_exit_status",
    "present_bash_call",
    "present_bash_result",
    "render_result",
    "resolve_workdir",
    "status_line",
]
