"""Plan mode: the ``exit_plan_mode`` tool, the plan-mode prompt section and the ``/plan`` command.

Plan mode is the ``plan`` flag of a session's permission state (the ``permissions``
service, logged as ``permission/mode``, so it survives resume and fork). While it is
on, the ``permissions`` plugin lets the agent read and search but refuses every
change; this plugin adds what the model and the user see of it:

* a prompt section (:data:`PLAN_SECTION`, or the configured ``section``) appended to
  the system prompt of each model request of an agent in plan mode (``agent/request``;
  an agent not in plan mode gets nothing);
* the ``exit_plan_mode {plan}`` tool, always registered (the tool list does not change
  with the mode) and read-only (the permissions plugin lets it run in plan mode):
  outside plan mode, or with an empty plan, it fails at once; in plan mode it asks
  the user through the ``approvals`` service to approve the plan (``approval/asked``
  / ``approval/decided``, no "always" answer). Approved, plan mode ends (back to the
  mode and policy of before) and the model is told to carry the plan out; any other
  answer keeps plan mode on and the model reads why (the user's message, if any), so
  it keeps planning. Without an approvals service nobody can approve: plan mode stays
  on (fail closed);
* :meth:`PlanMode.plan_command`, the handler of the ``/plan [message]`` chat command:
  plan mode on, and the message (if any) sent to the agent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final, TypedDict

from msgspec import UNSET

from dsh.core.agent import Agent
from dsh.core.approval import APPROVALS, PERMISSIONS, ApprovalDecision, ApprovalRequest
from dsh.core.errors import HarnessError
from dsh.core.llm import ContentBlock, GenerateOptions, text
from dsh.core.tools import ToolCallPresentation, ToolDefinition, ToolExecution, define_tool
from dsh.kernel import Context

PLUGIN_NAME: Final = "plan-mode"
TOOL_NAME: Final = "exit_plan_mode"

PLAN_SECTION: Final = """\
# Plan mode

This session is in plan mode. Explore and design, but change nothing: read files, search and run
commands that only look (the harness refuses writes, edits and commands that change anything).
Work out a plan a colleague could carry out: what to change, where, in which order, and how to check
it. When the plan is ready, present it by calling exit_plan_mode with the whole plan as its `plan`
argument, as the last tool call of your answer. The user approves it (plan mode then ends and you
carry it out) or keeps you planning with their feedback. Do not ask for approval in prose; if
exit_plan_mode fails, say so and show the plan in your answer."""
"""The default prompt section of an agent in plan mode."""

TOOL_DESCRIPTION: Final = (
    "Present your plan to the user and ask to leave plan mode. Call it only in plan mode, once the plan "
    "is complete, with the whole plan (markdown) as `plan`. Approved: plan mode ends and you carry the plan "
    "out. Not approved: you stay in plan mode and get the user's feedback."
)

APPROVAL_REASON: Final = "leave plan mode and carry out this plan"
"""The ``reason`` of the approval request of ``exit_plan_mode``."""

APPROVED_TEXT: Final = "The user approved the plan. Plan mode is off: carry out the plan now."

COMMAND_NAME: Final = "plan"
COMMAND_DESCRIPTION: Final = "plan mode: read and search only, until you approve a plan"
COMMAND_HINT: Final = "[message]"


class ExitPlanModeArgs(TypedDict):
    plan: str


class PlanModeError(HarnessError):
    """Why ``exit_plan_mode`` did not leave plan mode (the model reads the message)."""


_REFUSALS: Final = {
    "rejected": "The user did not approve the plan; plan mode stays on. Keep planning",
    "cancelled": "The approval was cancelled before the user answered; plan mode stays on",
    "unavailable": (
        "Nobody could approve the plan (no approval channel answered); plan mode stays on. "
        "Show the plan in your answer and ask the user to leave plan mode"
    ),
}


def refusal(decision: ApprovalDecision) -> str:
    """What the model reads when ``decision`` did not approve the plan."""
    reason = _REFUSALS.get(decision.outcome, _REFUSALS["rejected"])
    if decision.message is UNSET or not decision.message:
        return f"{reason}."
    return f"{reason}. The user said: {decision.message}"


def plan_title(plan: str) -> str:
    """The card title of a plan: its first heading (or first line), else ``Plan``."""
    for line in plan.splitlines():
        stripped = line.strip().lstrip("#").strip()
        if stripped:
            return stripped
    return "Plan"


def present_plan(args: ExitPlanModeArgs) -> ToolCallPresentation:
    """The card of an ``exit_plan_mode`` call: the plan's title, the plan as content."""
    return ToolCallPresentation(title=plan_title(args["plan"]), kind="other", content=(text(args["plan"]),))


class PlanMode:
    """The plugin's listeners, tool and command; ``ctx`` is the plugin's context."""

    def __init__(self, ctx: Context, section: str) -> None:
        self.ctx = ctx
        self.section = section

    def tool(self) -> ToolDefinition:
        """The ``exit_plan_mode`` tool."""
        return define_tool(
            TOOL_NAME,
            TOOL_DESCRIPTION,
            {"plan": {"type": "string", "description": "The whole plan, in markdown."}},
            self.exit_plan_mode,
            present_call=present_plan,
            read_only=True,  # it changes nothing itself: it asks, and the permissions service keeps the mode
        )

    def in_plan_mode(self, agent: object) -> bool:
        return self.ctx[PERMISSIONS].state(agent).plan

    def on_request(
        self,
        agent: Agent,
        _turn: int,
        _step: int,
        options: GenerateOptions,
        next: Callable[[], Awaitable[GenerateOptions]],
    ) -> Awaitable[GenerateOptions]:
        if self.in_plan_mode(agent):
            options.system = f"{options.system}\n\n{self.section}" if options.system else self.section
        return next()

    async def exit_plan_mode(self, args: ExitPlanModeArgs, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        agent = execution.agent
        if agent is None:
            raise PlanModeError("exit_plan_mode needs an agent: plan mode belongs to an agent's session", "NO_AGENT")
        if not self.in_plan_mode(agent):
            raise PlanModeError("this session is not in plan mode: there is nothing to leave", "NOT_IN_PLAN_MODE")
        if not args["plan"].strip():
            raise PlanModeError("the plan is empty: pass the whole plan as `plan`", "EMPTY_PLAN")
        approvals = self.ctx.get(APPROVALS)
        decision = ApprovalDecision(outcome="unavailable")
        if approvals is not None:
            request = ApprovalRequest(
                agent=agent,
                tool_name=TOOL_NAME,
                call_id=execution.call_id,
                arguments=args,
                reason=APPROVAL_REASON,
                grant="",
                signal=execution.signal,
            )
            decision = await approvals.request(request)
        if not decision.allowed:
            raise PlanModeError(refusal(decision), "PLAN_NOT_APPROVED")
        await self.ctx[PERMISSIONS].set_mode(agent, plan=False)
        return (text(APPROVED_TEXT),)

    async def plan_command(self, agent: Agent, args: str) -> str | None:
        """``/plan [message]``: put ``agent``'s session in plan mode, then send ``message`` if given."""
        await self.ctx[PERMISSIONS].set_mode(agent, plan=True)
        message = args.strip()
        if message:
            agent.steer((text(message),))
        return (
            "plan mode on: the agent reads and searches only, and asks you to approve its plan before changing anything"
        )
