"""``subagent``: child agents on sessions of their own, for the model and for Python callers.

A module plugin (YAML name ``subagent``) that needs ``agents`` and ``tools``. It
provides the ``subagents`` service (:class:`SubagentRuntime`, the Python API:
``await ctx[SUBAGENTS].spawn(parent, SubagentRequest(...))``) and registers the
``subagent``, ``subagent_output`` and ``subagent_cancel`` tools. Config::

    maxDepth: 1     # how deep sub-agents nest (1: children never get the sub-agent tools)

The ``subagent/start`` and ``subagent/end`` log event types are registered while the
plugin is loaded. Unloading it cancels and disposes every child it started.
Permissions: a child's mode and approvals may only be narrower than its parent's; a
permissions plugin enforces that on the ``subagent/spawn`` waterfall (this plugin
inherits the parent's ``AgentOptions.extra`` into the child and nothing more).
"""

from __future__ import annotations

from typing import cast

from pydantic import BaseModel, ConfigDict, Field

from dsh.core.agent import AGENTS
from dsh.core.session import register_event_type
from dsh.core.subagent import SubagentEndEvent, Subagents, SubagentStartEvent
from dsh.core.tools import TOOLS
from dsh.kernel import Context, ServiceHandle
from dsh.plugins.subagent.policy import UNRESTRICTED, ToolFilter
from dsh.plugins.subagent.run import Run, outcome_of, reason_kind
from dsh.plugins.subagent.runtime import PLUGIN_NAME, SubagentRuntime
from dsh.plugins.subagent.tools import (
    CANCEL_PARAMETERS,
    OUTPUT_PARAMETERS,
    SUBAGENT_DESCRIPTION,
    SUBAGENT_PARAMETERS,
    SubagentTools,
    answer_text,
    present_subagent_call,
)

DEFAULT_MAX_DEPTH = 1
"""Children of a top-level agent may not start children of their own."""


class Config(BaseModel):
    """``maxDepth`` (at least 1): the deepest a sub-agent may be (a top-level agent is at 0)."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    max_depth: int = Field(default=DEFAULT_MAX_DEPTH, ge=1, alias="maxDepth")


name = PLUGIN_NAME
inject = [AGENTS.name, TOOLS.name]


def apply(ctx: Context, config: Config) -> SubagentRuntime:
    """Provide ``subagents`` and register the event types and tools, all as effects of ``ctx``'s fiber."""
    ctx.effect(lambda: register_event_type(SubagentStartEvent), "subagent/start event type")
    ctx.effect(lambda: register_event_type(SubagentEndEvent), "subagent/end event type")
    runtime = SubagentRuntime(ctx, config.max_depth)
    tools = SubagentTools(cast(Subagents, ServiceHandle(runtime, ctx)))  # calls on behalf of this fiber
    registry = ctx[TOOLS]
    for definition in tools.definitions():
        registry.register(definition)
    return runtime


__all__ = [
    "CANCEL_PARAMETERS",
    "DEFAULT_MAX_DEPTH",
    "OUTPUT_PARAMETERS",
    "SUBAGENT_DESCRIPTION",
    "SUBAGENT_PARAMETERS",
    "UNRESTRICTED",
    "Config",
    "Run",
    "SubagentRuntime",
    "SubagentTools",
    "ToolFilter",
    "answer_text",
    "apply",
    "inject",
    "name",
    "outcome_of",
    "present_subagent_call",
    "reason_kind",
]
