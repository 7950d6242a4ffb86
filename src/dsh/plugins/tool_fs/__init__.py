"""``tool-fs``: the model-facing ``read``, ``write``, ``edit``, ``glob`` and ``grep`` tools.

A module plugin: load ``dsh.plugins.tool_fs``. It needs ``tools`` and ``fs`` and stays
pending until a filesystem (e.g. ``fs-local``) is loaded. Unloading it unregisters the
tools and forgets what each session has read.
"""

from __future__ import annotations

from dsh.core.fs import FS
from dsh.core.tools import TOOLS
from dsh.kernel import Context
from dsh.plugins.tool_fs.ledger import ReadLedger, session_cwd, session_key
from dsh.plugins.tool_fs.present import diff_stats, fenced_diff, present_change, unified_diff
from dsh.plugins.tool_fs.search import ripgrep_path
from dsh.plugins.tool_fs.tools import (
    EDIT_DESCRIPTION,
    GLOB_DESCRIPTION,
    GREP_DESCRIPTION,
    MAX_GLOB_FILES,
    MAX_LINE_CHARS,
    MAX_READ_LINES,
    PLUGIN_NAME,
    READ_DESCRIPTION,
    WRITE_DESCRIPTION,
    FsTools,
)

name = PLUGIN_NAME
inject = [TOOLS.name, FS.name]


def apply(ctx: Context, _config: object) -> FsTools:
    """Register the five tools on behalf of ``ctx``'s fiber (unregistered when it unloads)."""
    tools = FsTools(ctx[FS])
    registry = ctx[TOOLS]
    for definition in tools.definitions():
        registry.register(definition)
    ctx.effect(lambda: tools.ledger.forget, "tool-fs read ledger")
    return tools


__all__ = [
    "EDIT_DESCRIPTION",
    "GLOB_DESCRIPTION",
    "GREP_DESCRIPTION",
    "MAX_GLOB_FILES",
    "MAX_LINE_CHARS",
    "MAX_READ_LINES",
    "PLUGIN_NAME",
    "READ_DESCRIPTION",
    "WRITE_DESCRIPTION",
    "FsTools",
    "ReadLedger",
    "apply",
    "diff_stats",
    "fenced_diff",
    "inject",
    "name",
    "present_change",
    "ripgrep_path",
    "session_cwd",
    "session_key",
    "unified_diff",
]
