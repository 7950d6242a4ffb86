"""The ``plan-mode`` plugin: the prompt section, ``exit_plan_mode`` and ``/plan``, on the real stack.

A scripted model drives a real loop agent; the permissions and approvals services
are the real ones, and a test answerer on ``approval/request`` plays the user.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import ValidationError

from dsh.core.approval import (
    APPROVAL_REQUEST,
    PERMISSIONS,
    ApprovalDecidedEvent,
    ApprovalDecision,
    ApprovalRequest,
    ApprovalService,
    PermissionService,
    PermissionState,
)
from dsh.core.llm import text
from dsh.core.session import ToolResultEvent
from dsh.core.tools import TOOLS, ToolExecution
from dsh.kernel import Context
from dsh.plugins import plan_mode
from dsh.plugins.plan_mode import (
    APPROVED_TEXT,
    PLAN_SECTION,
    TOOL_NAME,
    PlanMode,
    plan_title,
    present_plan,
    refusal,
)
from dsh.testing.harness import Harness
from dsh.testing.scripted import ScriptEntry, text_response, tool_call_response

PLAN = "# Fix the parser\n\n1. read parser.py\n2. handle the empty line"


class Permissions:
    def __init__(self, ctx: Context, config: object = None) -> None:
        PermissionService(ctx)


@dataclass
class User:
    """Answers approval requests with the queued decisions; records what it was asked."""

    answers: list[ApprovalDecision] = field(default_factory=list)
    asked: list[ApprovalRequest] = field(default_factory=list)

    async def answer(
        self, request: ApprovalRequest, next: Callable[[], Awaitable[ApprovalDecision]]
    ) -> ApprovalDecision:
        self.asked.append(request)
        return self.answers.pop(0)


@dataclass
class Stack:
    harness: Harness
    user: User
    plan: PlanMode

    @property
    def ctx(self) -> Context:
        return self.harness.ctx

    def state(self, agent: object) -> PermissionState:
        return self.ctx[PERMISSIONS].state(agent)


async def stack_of(harness: Harness, *, approvals: bool = True, config: dict[str, Any] | None = None) -> Stack:
    await harness.ctx.plugin(Permissions)
    if approvals:
        await harness.ctx.plugin(ApprovalService)
    user = User()
    harness.ctx.on(APPROVAL_REQUEST, user.answer)
    fiber = await harness.ctx.plugin(plan_mode, config or {})
    return Stack(harness, user, fiber.instance)


@pytest.fixture
def script() -> list[ScriptEntry]:
    return [tool_call_response("c1", TOOL_NAME, {"plan": PLAN}), text_response("on it")]


@pytest.fixture
async def stack(script: list[ScriptEntry]) -> AsyncIterator[Stack]:
    async with Harness(script) as harness:
        yield await stack_of(harness)


def results(agent: Any) -> list[tuple[bool, str]]:
    return [
        (e.data.is_error, "".join(getattr(b, "text", "") for b in e.data.content))
        for e in agent.session.events
        if type(e) is ToolResultEvent
    ]


async def run_turn(agent: Any, prompt: str = "plan it") -> None:
    agent.send([text(prompt)])
    await asyncio.sleep(0)
    await agent.when_idle()


async def test_an_approved_plan_ends_plan_mode_and_the_model_is_told(stack: Stack) -> None:
    agent = stack.harness.agent()
    await stack.plan.plan_command(agent, "")
    await stack.ctx[PERMISSIONS].set_mode(agent, policy="auto")
    assert stack.state(agent).plan
    stack.user.answers.append(ApprovalDecision(outcome="allowed-once"))
    await run_turn(agent)
    assert results(agent) == [(False, APPROVED_TEXT)]
    assert stack.state(agent) == PermissionState(mode="workspace-write", policy="auto", plan=False)
    (asked,) = stack.user.asked
    assert (asked.tool_name, asked.call_id, asked.grant) == (TOOL_NAME, "c1", "")
    assert asked.arguments == {"plan": PLAN}
    first, second = stack.harness.model.requests
    assert first.system is not None
    assert PLAN_SECTION in first.system
    assert second.system is None or PLAN_SECTION not in second.system  # plan mode over: gone
    outcomes = [e.data.outcome for e in agent.session.events if type(e) is ApprovalDecidedEvent]
    assert outcomes == ["allowed-once"]


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        (
            ApprovalDecision(outcome="rejected", message="split step 2"),
            "The user did not approve the plan; plan mode stays on. Keep planning. The user said: split step 2",
        ),
        (ApprovalDecision(outcome="rejected"), "The user did not approve the plan; plan mode stays on. Keep planning."),
        (
            ApprovalDecision(outcome="cancelled"),
            "The approval was cancelled before the user answered; plan mode stays on.",
        ),
    ],
)
async def test_a_plan_not_approved_keeps_plan_mode(stack: Stack, decision: ApprovalDecision, expected: str) -> None:
    agent = stack.harness.agent()
    await stack.plan.plan_command(agent, "")
    stack.user.answers.append(decision)
    await run_turn(agent)
    assert results(agent) == [(True, f"Error: {expected}")]
    assert stack.state(agent).plan


async def test_without_approvals_nobody_can_approve(script: list[ScriptEntry]) -> None:
    async with Harness(script) as harness:
        stack = await stack_of(harness, approvals=False)
        agent = harness.agent()
        await stack.plan.plan_command(agent, "")
        await run_turn(agent)
        ((is_error, message),) = results(agent)
        assert is_error
        assert "Nobody could approve the plan" in message
        assert stack.state(agent).plan
        assert stack.user.asked == []


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"plan": PLAN}, "Error: this session is not in plan mode: there is nothing to leave"),
        ({"plan": " \n "}, "Error: the plan is empty: pass the whole plan as `plan`"),
    ],
)
async def test_exit_fails_at_once_outside_plan_mode_or_for_an_empty_plan(
    arguments: dict[str, str], message: str
) -> None:
    script: list[ScriptEntry] = [tool_call_response("c1", TOOL_NAME, arguments), text_response("ok")]
    async with Harness(script) as harness:
        stack = await stack_of(harness)
        agent = harness.agent()
        if not arguments["plan"].strip():
            await stack.plan.plan_command(agent, "")
        await run_turn(agent)
        assert results(agent) == [(True, message)]
        assert stack.user.asked == []


async def test_exit_needs_an_agent(stack: Stack) -> None:
    tool = stack.ctx[TOOLS].get(TOOL_NAME)
    assert tool is not None
    with pytest.raises(plan_mode.PlanModeError, match="exit_plan_mode needs an agent"):
        await tool.execute({"plan": PLAN}, ToolExecution(call_id="c1", name=TOOL_NAME, arguments={"plan": PLAN}))


async def test_the_plan_command_turns_plan_mode_on_and_sends_its_message() -> None:
    async with Harness([text_response("looking")]) as harness:
        stack = await stack_of(harness)
        agent = harness.agent()
        reply = await stack.plan.plan_command(agent, "  how do we speed up the tests?  ")
        assert reply is not None
        assert reply.startswith("plan mode on")
        await asyncio.sleep(0)
        await agent.when_idle()
        (request,) = harness.model.requests
        assert request.system is not None
        assert PLAN_SECTION in request.system
        assert "how do we speed up the tests?" in repr(request.messages[-1])
        assert stack.state(agent).plan


async def test_a_configured_section_replaces_the_default_and_unloading_removes_the_tool() -> None:
    async with Harness([text_response("ok")]) as harness:
        await harness.ctx.plugin(Permissions)
        fiber = await harness.ctx.plugin(plan_mode, {"section": "PLAN ONLY"})
        agent = harness.agent(system_prompt="You help.")
        await fiber.instance.plan_command(agent, "")
        await run_turn(agent)
        assert harness.model.requests[0].system == "You help.\n\nPLAN ONLY"
        assert TOOL_NAME in [schema.name for schema in harness.model.requests[0].tools or ()]
        await fiber.dispose()
        assert harness.ctx[TOOLS].get(TOOL_NAME) is None


async def test_the_config_is_checked() -> None:
    async with Harness() as harness:
        await harness.ctx.plugin(Permissions)
        with pytest.raises(Exception, match="sections") as caught:
            await harness.ctx.plugin(plan_mode, {"sections": "typo"})
        assert caught.value is not None
    with pytest.raises(ValidationError):
        plan_mode.Config.model_validate({"nope": 1})


def test_the_card_shows_the_plan_under_its_title() -> None:
    card = present_plan({"plan": PLAN})
    assert (card.title, card.kind, card.content) == ("Fix the parser", "other", (text(PLAN),))
    assert plan_title("\n\n  plain first line\nmore") == "plain first line"
    assert plan_title("  \n#\n") == "Plan"
    assert refusal(ApprovalDecision(outcome="unavailable", message="")).startswith("Nobody could approve")


async def test_the_tool_is_read_only_so_plan_mode_lets_it_run(stack: Stack) -> None:
    tool = stack.ctx[TOOLS].get(TOOL_NAME)
    assert tool is not None
    assert tool.read_only
    assert not tool.concurrency_safe
