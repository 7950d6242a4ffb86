"""``workspace-instructions``: the workspace's ``AGENTS.md`` (or ``CLAUDE.md``) in the system prompt.

A module plugin (``name``, ``inject``, ``Config``, ``apply``); load it as
``dsh.plugins.workspace_instructions``. See :mod:`.plugin` for what it does and
:mod:`.loader` for how the files are found.
"""

from dsh.plugins.workspace_instructions.loader import InstructionReader, Instructions, project_chain, render
from dsh.plugins.workspace_instructions.plugin import Config, WorkspaceInstructions, apply, inject, name

__all__ = [
    "Config",
    "InstructionReader",
    "Instructions",
    "WorkspaceInstructions",
    "apply",
    "inject",
    "name",
    "project_chain",
    "render",
]
