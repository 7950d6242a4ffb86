"""``permissions``: permission modes, approval policies and rules around every tool call.

A module plugin (``dsh.plugins.permissions``, YAML name ``permissions``); it needs
``tools`` and uses ``fs`` and ``bash`` when they are there. It provides the
``approvals`` service (:class:`~dsh.core.approval.ApprovalService`: do not load the
``approvals`` entry as well) and the ``permissions`` service
(:class:`~dsh.core.approval.PermissionService`), and gates every call through
:class:`~dsh.plugins.permissions.gate.PermissionGate`. Config (camelCase in YAML)::

    mode: workspace-write    # read-only | workspace-write | full-access: a new session's mode
    policy: ask              # ask | auto | never-ask: what happens to calls outside the mode
    allow: [read, "bash(git status*)"]   # rules that run without asking (see .rules)
    deny: ["bash(rm -rf*)", "mcp__web__*"]  # rules that never run; deny wins over allow

``mode`` and ``policy`` are defaults: each session logs its own (``permission/mode``)
at its first turn and keeps it when resumed or forked; ``PERMISSIONS.set_mode``
changes it mid-session. Unloading the plugin removes its listeners, its services and
its event types.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from dsh.core.approval import ApprovalPolicy, ApprovalService, PermissionMode, PermissionService, PermissionState
from dsh.core.tools import TOOLS
from dsh.kernel import Context
from dsh.plugins.permissions.children import narrow_children
from dsh.plugins.permissions.gate import PermissionDeniedError, PermissionGate, refusal_text
from dsh.plugins.permissions.rules import Rule, bash_grant, matches, parse_rule, path_grant, subject_of

name = "permissions"
inject = [TOOLS.name]


class Config(BaseModel):
    """See the module docstring."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    mode: PermissionMode = "workspace-write"
    policy: ApprovalPolicy = "ask"
    allow: tuple[str, ...] = Field(default=())
    deny: tuple[str, ...] = Field(default=())

    @field_validator("allow", "deny")
    @classmethod
    def _rules(cls, rules: tuple[str, ...]) -> tuple[str, ...]:
        for rule in rules:
            parse_rule(rule)
        return rules


def apply(ctx: Context, config: Config) -> PermissionGate:
    """Provide the services and install the gate on behalf of ``ctx``'s fiber."""
    ApprovalService(ctx)
    PermissionService(ctx, PermissionState(mode=config.mode, policy=config.policy))
    narrow_children(ctx)
    return PermissionGate(ctx, config.allow, config.deny)


__all__ = [
    "Config",
    "PermissionDeniedError",
    "PermissionGate",
    "Rule",
    "apply",
    "bash_grant",
    "inject",
    "matches",
    "name",
    "parse_rule",
    "path_grant",
    "refusal_text",
    "subject_of",
]
