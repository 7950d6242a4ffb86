"""``--permission-mode``, ``--approval-policy`` and ``--yes`` for ``dsh run`` and ``dsh chat``.

:func:`apply_permission_flags` runs once the agent exists. A given mode or policy is
set on the agent's session (``PERMISSIONS.set_mode``: logged at the next turn start,
so it also switches a resumed or forked session that had another one); without the
flags a new session gets the tree's defaults (the built-in profiles: workspace-write,
ask) and a resumed one keeps its own. ``--yes`` answers every approval request
"allow once" before any other answerer is asked (each one is still logged).

:class:`Refusals` is ``dsh run``'s view of what was refused: it counts the tool
results of the run's turns that the permissions refused (error code
``PERMISSION_DENIED``) and remembers the first request nobody answered, so the run
can end with one line naming the flag that allows it and exit
:data:`EXIT_REFUSED`.
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import Any

from dsh.cli.errors import CliError
from dsh.core.approval import (
    APPROVAL_REQUEST,
    PERMISSIONS,
    ApprovalDecision,
    ApprovalRequest,
)
from dsh.core.session import Session, ToolErrorInfo, ToolResultEvent
from dsh.kernel import Context

EXIT_REFUSED = 5
"""``dsh run``'s exit status when the turn completed but the permissions refused a tool call."""

REFUSED_CODE = "PERMISSION_DENIED"
"""The error code of a refused call's tool result."""

ALLOW_ONCE = ApprovalDecision(outcome="allowed-once")


async def apply_permission_flags(root: Context, agent: object, args: argparse.Namespace) -> None:
    """Apply the flags to ``agent``'s session (see the module docstring).

    Raises :class:`CliError` (status 2) when a flag is given but the booted tree has no
    ``permissions`` plugin.
    """
    mode = getattr(args, "permission_mode", None)
    policy = getattr(args, "approval_policy", None)
    yes = bool(getattr(args, "yes", False))
    if mode is None and policy is None and not yes:
        return
    permissions = root.get(PERMISSIONS)
    if permissions is None:
        raise CliError(
            "--permission-mode, --approval-policy and --yes need the permissions plugin, which the tree does not "
            "load: add `- {id: permissions, name: permissions}` to it",
            2,
        )
    if mode is not None or policy is not None:
        await permissions.set_mode(agent, mode=mode, policy=policy)
    if yes:

        async def allow(request: ApprovalRequest, next: Callable[[], Awaitable[ApprovalDecision]]) -> ApprovalDecision:
            return ALLOW_ONCE

        root.on(APPROVAL_REQUEST, allow, prepend=True)


class Refusals:
    """What the permissions refused in this run (see the module docstring)."""

    def __init__(self, root: Context) -> None:
        self.root = root
        self.unanswered: list[ApprovalRequest] = []
        root.on(APPROVAL_REQUEST, self._watch)

    def report(self, agent: Any, since: int) -> str | None:
        """The line to say when calls logged from ``since`` on were refused; None when none was."""
        refused = self.count(agent.session, since)
        if not refused:
            return None
        permissions = self.root.get(PERMISSIONS)
        state = permissions.state(agent) if permissions is not None else None
        mode = "unknown" if state is None else ("plan" if state.plan else state.mode)
        return self.message(refused, mode)

    async def _watch(self, request: ApprovalRequest, next: Callable[[], Awaitable[Any]]) -> Any:
        decision = await next()
        if isinstance(decision, ApprovalDecision) and decision.outcome == "unavailable":
            self.unanswered.append(request)
        return decision

    @staticmethod
    def count(session: Session, since: int) -> int:
        """How many tool results logged from ``since`` on were refusals."""
        refused = 0
        for event in session.events[since:]:
            if type(event) is ToolResultEvent:
                error = event.data.error
                if isinstance(error, ToolErrorInfo) and error.code == REFUSED_CODE:
                    refused += 1
        return refused

    def message(self, refused: int, mode: str) -> str:
        """The one line said when ``refused`` calls were refused under ``mode``."""
        calls = "1 tool call was" if refused == 1 else f"{refused} tool calls were"
        if not self.unanswered:
            return (
                f"{calls} refused by the permissions ({mode} mode); --permission-mode, --approval-policy and the "
                "`permissions: {allow: [...]}` rules of the settings file say what may run"
            )
        first = self.unanswered[0]
        wider = f"--permission-mode {first.needs} allows it, " if first.needs not in (None, mode) else ""
        return (
            f"{calls} refused: {first.reason}; nobody can approve calls in dsh run: {wider}--yes allows "
            "every call that would be asked"
        )
