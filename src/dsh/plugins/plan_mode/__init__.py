"""``plan-mode``: read-and-search-only sessions that leave plan mode through an approved plan.

A module plugin (``dsh.plugins.plan_mode``, YAML name ``plan-mode``). It needs
``tools`` and ``permissions`` (the state it reads and changes) and asks through
``approvals`` when that service is loaded; see :mod:`.plan`. Config: ``section``, the
prompt text of an agent in plan mode (default :data:`PLAN_SECTION`). Unloading it
removes the tool and the prompt listener.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from dsh.core.agent import AGENT_REQUEST
from dsh.core.approval import PERMISSIONS
from dsh.core.commands import COMMANDS, Command
from dsh.core.tools import TOOLS
from dsh.kernel import Context
from dsh.plugins.plan_mode.plan import (
    APPROVAL_REASON,
    APPROVED_TEXT,
    COMMAND_DESCRIPTION,
    COMMAND_HINT,
    COMMAND_NAME,
    PLAN_SECTION,
    PLUGIN_NAME,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    ExitPlanModeArgs,
    PlanMode,
    PlanModeError,
    plan_title,
    present_plan,
    refusal,
)

name = PLUGIN_NAME
inject = [TOOLS.name, PERMISSIONS.name]


class Config(BaseModel):
    """``section``: the prompt section of an agent in plan mode (not empty)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    section: str = PLAN_SECTION


def apply(ctx: Context, config: Config) -> PlanMode:
    """Register ``exit_plan_mode``, the prompt listener and, when a ``commands`` service is
    loaded before this plugin, the ``/plan`` command, on behalf of ``ctx``'s fiber."""
    plan = PlanMode(ctx, config.section)
    ctx[TOOLS].register(plan.tool())
    ctx.on(AGENT_REQUEST, plan.on_request)
    commands = ctx.get(COMMANDS)
    if commands is not None:
        commands.register(
            Command(name=COMMAND_NAME, description=COMMAND_DESCRIPTION, hint=COMMAND_HINT, handler=plan.plan_command)
        )
    return plan


__all__ = [
    "APPROVAL_REASON",
    "APPROVED_TEXT",
    "COMMAND_DESCRIPTION",
    "COMMAND_HINT",
    "COMMAND_NAME",
    "PLAN_SECTION",
    "PLUGIN_NAME",
    "TOOL_DESCRIPTION",
    "TOOL_NAME",
    "Config",
    "ExitPlanModeArgs",
    "PlanMode",
    "PlanModeError",
    "apply",
    "inject",
    "name",
    "plan_title",
    "present_plan",
    "refusal",
]
