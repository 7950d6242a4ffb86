"""The ``workspace-instructions`` plugin: the workspace's ``AGENTS.md`` in every model request.

On ``agent/request`` it appends a "Workspace instructions" section to the request's
system prompt, built from the instruction files of the agent's session workspace
(the header's ``cwd``, else the process's) and its parents up to the project root
(see :mod:`.loader`). Each agent gets its own workspace's files, so sessions with
different workspaces in one process never see each other's. Files are re-read when
they change. Unloading the plugin removes the listener.

Config: ``candidates`` (default ``["AGENTS.md", "CLAUDE.md"]``: the first present in a
directory wins), ``rootMarkers`` (default ``[".git"]``), ``maxBytes`` (budget of the
section, default 65,536; 0 turns it off), ``maxFileBytes`` (default 1 MiB: a larger
file is skipped).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from dsh.core.agent import AGENT_REQUEST, Agent
from dsh.core.llm import GenerateOptions
from dsh.kernel import Context
from dsh.plugins.workspace_instructions.loader import InstructionReader, render

name = "workspace-instructions"
inject: list[str] = []


class Config(BaseModel):
    """The plugin's config; see the module docstring."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)

    candidates: list[str] = Field(default_factory=lambda: ["AGENTS.md", "CLAUDE.md"])
    root_markers: list[str] = Field(default_factory=lambda: [".git"])
    max_bytes: int = Field(default=65_536, ge=0)
    max_file_bytes: int = Field(default=1 << 20, ge=1)


class WorkspaceInstructions:
    """The ``agent/request`` listener; one reader (and its cache) per plugin instance."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.reader = InstructionReader(config.candidates, config.root_markers, config.max_file_bytes)

    def section(self, workspace: str) -> str:
        """The section for ``workspace`` (empty when no file applies)."""
        return render(self.reader.chain(workspace), self.config.max_bytes)

    def on_request(
        self,
        agent: Agent,
        _turn: int,
        _step: int,
        options: GenerateOptions,
        next: Callable[[], Awaitable[GenerateOptions]],
    ) -> Awaitable[GenerateOptions]:
        cwd = agent.session.header.cwd
        section = self.section(cwd if isinstance(cwd, str) else os.getcwd())
        if section:
            options.system = f"{options.system}\n\n{section}" if options.system else section
        return next()


def apply(ctx: Context, config: Config) -> WorkspaceInstructions:
    """Listen to ``agent/request`` on behalf of ``ctx``'s fiber and return the listener's owner."""
    plugin = WorkspaceInstructions(config)
    if config.max_bytes > 0:
        ctx.on(AGENT_REQUEST, plugin.on_request)
    return plugin
