"""The permission gate: every tool call is allowed, asked or refused by mode, policy and rules.

:class:`PermissionGate` sits on ``tools/execute`` and decides before the tool body runs:

1. a ``deny`` rule covering the call refuses it (no asking);
2. in plan mode only read-only tools run (and bash when the sandbox confines it to
   read-only); anything else is refused with a note to present the plan;
3. what the call needs: a read-only tool (:attr:`ToolDefinition.read_only`) needs
   ``read-only``; bash needs nothing more than the mode when the bash executor's
   sandbox confines it to the mode, else ``full-access``; a tool that writes files only
   through the ``fs`` service (:attr:`ToolDefinition.fs_writes`: ``write``, ``edit``)
   needs ``workspace-write``; every other tool (MCP tools, unknown ones) ``full-access``;
   a path (``file_path`` or ``path``) outside the workspace needs
   ``full-access`` (or a rule or grant whose pattern names it);
4. a call the mode covers runs, as does one an ``allow`` rule or a grant covers;
5. otherwise the policy decides: ``ask`` asks through :data:`APPROVALS` (an
   "always" answer grants the request's scope for the session), ``auto`` runs unsandboxed
   bash in ``workspace-write`` and refuses the rest, ``never-ask`` refuses.

A refused call never runs; its result is an error saying why (and the user's message,
if any) so the model can take another way. The ``fs/access`` and ``fs/write-intent``
listeners are the backstop inside a running call: a path outside the workspace is
allowed only when the call was cleared for it, and a call cleared as read-only
cannot write. Outside a tool call both leave the decision to the next listener.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from dsh.core.approval import (
    APPROVALS,
    PERMISSION_CHANGED,
    PERMISSIONS,
    ApprovalDecision,
    ApprovalRequest,
    PermissionMode,
    PermissionState,
)
from dsh.core.bash import BASH
from dsh.core.errors import HarnessError
from dsh.core.fs import FS, FS_ACCESS, FS_WRITE_INTENT, FileStat, FsAccessRequest, FsError, FsWriteIntent
from dsh.core.tools import TOOLS, TOOLS_EXECUTE, ToolDefinition, ToolExecution, ToolExecutionResult, tool_error_result
from dsh.kernel import Context
from dsh.plugins.permissions.rules import (
    Rule,
    Subject,
    bash_grant,
    first_match,
    parse_rule,
    path_argument,
    path_grant,
    subject_of,
)

RANK: dict[str, int] = {"read-only": 0, "workspace-write": 1, "full-access": 2}
BASH_TOOL = "bash"


class PermissionDeniedError(HarnessError):
    """A call the permissions refused; the message says why and what the model may do instead."""

    def __init__(self, message: str) -> None:
        super().__init__(message, "PERMISSION_DENIED")


@dataclass
class _Call:
    """The clearance of the tool call in flight (a context variable while it runs)."""

    outside: set[str] = field(default_factory=set)
    may_write: bool = True
    probing: bool = False
    probed: list[str] = field(default_factory=list)


_CALL: contextvars.ContextVar[_Call | None] = contextvars.ContextVar("dsh_permissions_call", default=None)


@dataclass(frozen=True)
class _Verdict:
    """What a call lacks: the mode that would allow it, the reason and the scope to ask for."""

    needs: PermissionMode
    reason: str
    grant: str
    outside: str | None


def session_cwd(agent: object | None) -> str | None:
    cwd = getattr(getattr(getattr(agent, "session", None), "header", None), "cwd", None)
    return cwd if isinstance(cwd, str) else None


class PermissionGate:
    """The listeners of one plugin load; see the module docstring."""

    def __init__(self, ctx: Context, allow: tuple[str, ...], deny: tuple[str, ...]) -> None:
        self.ctx = ctx
        self.allow = tuple(parse_rule(rule) for rule in allow)
        self.deny = tuple(parse_rule(rule) for rule in deny)
        self._grant_rules: dict[str, Rule] = {}
        self._said_unsandboxed = False
        ctx.on(TOOLS_EXECUTE, self.execute)
        ctx.on(FS_ACCESS, self.access)
        ctx.on(FS_WRITE_INTENT, self.write_intent)

    # ------------------------------------------------------------- helpers
    def _grants(self, state: PermissionState) -> tuple[Rule, ...]:
        rules = []
        for text in state.grants:
            rule = self._grant_rules.get(text)
            if rule is None:
                try:
                    rule = self._grant_rules[text] = parse_rule(text)
                except ValueError:
                    continue  # a grant this version cannot read grants nothing
            rules.append(rule)
        return tuple(rules)

    def _bash_confined(self, mode: PermissionMode) -> bool:
        bash = self.ctx.get(BASH)
        if bash is None:
            return False
        support = bash.sandbox_support()
        confined = support.covers(mode)
        if not confined and mode != "full-access" and not self._said_unsandboxed:
            self._said_unsandboxed = True
            self.ctx.logger.warn(
                "bash is not sandboxed here (%s): bash calls outside full-access mode are asked", support.detail
            )
        return confined

    def _outside_path(self, execution: ToolExecution) -> tuple[str | None, tuple[str, ...]]:
        """The resolved path of the call's ``path`` argument when it lies outside the workspace, and its spellings."""
        path = path_argument(execution.arguments)
        fs = self.ctx.get(FS)
        if path is None or fs is None:
            return None, ()
        workspace = fs.workspace(session_cwd(execution.agent))
        probe = _Call(probing=True)
        token = _CALL.set(probe)
        try:
            resolved = fs.resolve(workspace, path, "permission check")
        except FsError:
            resolved = None
        finally:
            _CALL.reset(token)
        if probe.probed:
            outside = probe.probed[0]
            return outside, (outside,)
        if resolved is None:
            return None, ()
        return None, (resolved, workspace.display(resolved))

    def _verdict(
        self,
        definition: ToolDefinition,
        state: PermissionState,
        mode: PermissionMode,
        subject: Subject,
        outside: str | None,
    ) -> _Verdict | None:
        """What the call lacks (None: it may run)."""
        name = subject.tool
        rules = self.allow + self._grants(state)
        allowed = first_match(rules, subject) is not None
        if definition.read_only:
            needs: PermissionMode = "read-only"
            reason, grant = f"{name} {subject.text or ''}".strip(), name
        elif name == BASH_TOOL and subject.command:
            command = subject.values[0]
            needs = mode if self._bash_confined(mode) else "full-access"
            reason = f"run a command bash cannot be sandboxed for in {mode} mode: {command}"
            grant = bash_grant(command)
        elif definition.fs_writes:
            needs = "workspace-write"
            what = f"{name} {subject.text}" if subject.text is not None else name
            reason = f"{what}: changing files needs workspace-write mode (the session is {mode})"
            grant = name
        else:
            needs = "full-access"
            reason = f"{name}: a tool that may change anything needs full-access mode (the session is {mode})"
            grant = name
        if outside is not None:
            named = any(rule.argument is not None and _covers(rule, subject) for rule in rules)
            if mode != "full-access" and not named:
                verb = "read" if definition.read_only else "use"
                reason = f"{name}: {verb} a path outside the workspace: {outside}"
                return _Verdict("full-access", reason, path_grant(name, outside), outside)
        if allowed or RANK[needs] <= RANK[mode]:
            return None
        return _Verdict(needs, reason, grant, outside)

    # ----------------------------------------------------------- listeners
    async def execute(
        self, execution: ToolExecution, next: Callable[[], Awaitable[ToolExecutionResult]]
    ) -> ToolExecutionResult:
        definition = self.ctx[TOOLS].get(execution.name)
        if definition is None:
            return await next()  # the registry reports the unknown tool; no body runs
        permissions = self.ctx[PERMISSIONS]
        state = permissions.state(execution.agent)
        mode: PermissionMode = "read-only" if state.plan else state.mode
        outside, spellings = self._outside_path(execution)
        subject = subject_of(execution.name, execution.arguments, spellings)
        rule = first_match(self.deny, subject, deny=True)
        if rule is not None:
            return self._refused(execution, f"{execution.name} is denied by the permission rule {rule.text!r}")
        if state.plan and not definition.read_only and not self._plan_bash(execution):
            return self._refused(
                execution,
                f"{execution.name} cannot run in plan mode: only reading and searching are allowed until the "
                "user approves a plan. Present your plan with exit_plan_mode",
            )
        verdict = self._verdict(definition, state, mode, subject, outside)
        if verdict is not None:
            refusal = await self._decide(execution, state, mode, verdict)
            if refusal is not None:
                return refusal
        call = _Call(may_write=not definition.read_only)
        if mode == "full-access":
            call.outside.add("*")
        elif outside is not None:
            call.outside.add(outside)
        token = _CALL.set(call)
        try:
            return await next()
        finally:
            _CALL.reset(token)

    def _plan_bash(self, execution: ToolExecution) -> bool:
        return execution.name == BASH_TOOL and self._bash_confined("read-only")

    async def _decide(
        self, execution: ToolExecution, state: PermissionState, mode: PermissionMode, verdict: _Verdict
    ) -> ToolExecutionResult | None:
        """None when the call may run after all; else its refusal."""
        policy = state.policy
        if policy == "auto":
            unconfined_bash = execution.name == BASH_TOOL and verdict.outside is None
            if unconfined_bash and RANK[mode] >= RANK["workspace-write"]:
                return None
            return self._refused(execution, f"not allowed in {mode} mode: {verdict.reason}")
        if policy == "never-ask":
            return self._refused(execution, f"not allowed in {mode} mode: {verdict.reason}")
        request = ApprovalRequest(
            agent=execution.agent,
            tool_name=execution.name,
            call_id=execution.call_id,
            arguments=execution.arguments,
            reason=verdict.reason,
            grant=verdict.grant,
            signal=execution.signal,
            needs=verdict.needs,
        )
        decision = await self.ctx[APPROVALS].request(request)
        if decision.allowed:
            if decision.outcome == "allowed-always":
                self.ctx.emit(PERMISSION_CHANGED, execution.agent, self.ctx[PERMISSIONS].state(execution.agent))
            return None
        return self._refused(execution, refusal_text(decision, verdict.reason))

    def _refused(self, execution: ToolExecution, message: str) -> ToolExecutionResult:
        return tool_error_result(execution.call_id, PermissionDeniedError(message + ". It did not run."))

    def access(self, request: FsAccessRequest, next: Callable[[], bool]) -> bool:
        call = _CALL.get()
        if call is None:
            return next()
        if call.probing:
            call.probed.append(request.path)
            return False
        if "*" in call.outside or request.path in call.outside or request.real_path in call.outside:
            return True
        return next()

    def write_intent(self, intent: FsWriteIntent, next: Callable[[], Awaitable[FileStat]]) -> Awaitable[FileStat]:
        call = _CALL.get()
        if call is not None and not call.may_write:
            raise FsError(
                f"{intent.path} was not written: this call was allowed to read only (a read-only tool, "
                "or the session's read-only mode)",
                "DENIED",
                intent.path,
            )
        return next()


def _covers(rule: Rule, subject: Subject) -> bool:
    return first_match((rule,), subject) is not None


def refusal_text(decision: ApprovalDecision, reason: str) -> str:
    """What the model reads when an asked call did not run."""
    outcome = decision.outcome
    if outcome == "rejected":
        text = f"The user rejected this call ({reason})"
    elif outcome == "cancelled":
        text = f"The approval of this call was cancelled ({reason})"
    else:
        text = f"Nobody was there to approve this call ({reason})"
    message = decision.message
    if isinstance(message, str) and message:
        text += f". The user says: {message}"
    return text
