"""``llm-demo``: a keyless, deterministic model for demos (``dsh run --demo``).

This package is the plugin (a module plugin: ``name``, ``inject``, ``Config``,
``apply``); load it as ``dsh.plugins.demo``. It answers model ``demo``: a prompt
gets one real ``bash`` tool call (``ls``, ``echo <text>``, or ``$ <command>`` as
typed), and the tool's result gets a short summary. Every text it writes is
labelled ``[demo model]``. It needs ``llm``, and a ``tool-bash`` stack for the
call to run.

* :mod:`.script` -- what it says (pure);
* :mod:`.model` -- :class:`DemoModel`, the adapter;
* :mod:`.plugin` -- the plugin entry.
"""

from dsh.plugins.demo.model import DemoModel
from dsh.plugins.demo.plugin import DEMO_MODEL, Config, apply, inject, name
from dsh.plugins.demo.script import (
    LABEL,
    PREVIEW_LINES,
    PlannedCall,
    announce,
    command_of,
    count_tool_calls,
    last_tool_result,
    latest_prompt,
    plan_command,
    summarize_result,
)

__all__ = [
    "DEMO_MODEL",
    "LABEL",
    "PREVIEW_LINES",
    "Config",
    "DemoModel",
    "PlannedCall",
    "announce",
    "apply",
    "command_of",
    "count_tool_calls",
    "inject",
    "last_tool_result",
    "latest_prompt",
    "name",
    "plan_command",
    "summarize_result",
]
