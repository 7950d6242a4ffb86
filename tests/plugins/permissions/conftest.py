"""A real tool stack under the permissions plugin: fs-local, tool-fs, bash-local, tool-bash and a probe tool."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import dsh.plugins.permissions as permissions
import dsh.plugins.tool_bash as tool_bash
import dsh.plugins.tool_fs as tool_fs
from dsh.core.approval import (
    APPROVAL_REQUEST,
    PERMISSIONS,
    ApprovalAskedEvent,
    ApprovalDecidedEvent,
    ApprovalDecision,
    ApprovalRequest,
)
from dsh.core.bash import SandboxSupport
from dsh.core.llm import UNSET, TextBlock, text
from dsh.core.session import Session, SessionHeader
from dsh.core.system_prompt import SystemPrompt
from dsh.core.tools import TOOLS, ToolDefinition, ToolExecution, ToolExecutionResult, ToolRegistry
from dsh.kernel import AbortSignal, Context
from dsh.plugins.bash_local import LocalBashExecutor
from dsh.plugins.fs_local import LocalFileSystem

NO_SANDBOX = SandboxSupport(detail="no sandbox on this test host")
CONFINED = SandboxSupport(backend="bwrap", fs_write=True, network=True, detail="test: confined")


class FakeAgent:
    """Just enough of an agent: a session with a cwd."""

    def __init__(self, cwd: str, session_id: str = "s1") -> None:
        self.session = Session(session_id, header=SessionHeader(version=1, id=session_id, created_at=0, cwd=cwd))


def executor_reporting(support: SandboxSupport) -> type[LocalBashExecutor]:
    """The real local executor, reporting ``support`` instead of probing this host."""

    class Reporting(LocalBashExecutor):
        def sandbox_support(self) -> SandboxSupport:
            return support

    return Reporting


Answer = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]


@dataclass
class Stack:
    root: Context
    ws: Path
    agent: FakeAgent
    probe_runs: list[Any] = field(default_factory=list)
    asked: list[ApprovalRequest] = field(default_factory=list)
    answer: Answer | None = None
    calls: int = 0

    async def call(self, name: str, arguments: Any, signal: AbortSignal | None = None) -> ToolExecutionResult:
        self.calls += 1
        execution = ToolExecution(
            call_id=f"call-{self.calls}", name=name, arguments=arguments, agent=self.agent, signal=signal
        )
        return await self.root[TOOLS].execute(execution)

    async def set_mode(self, **change: Any) -> None:
        await self.root[PERMISSIONS].set_mode(self.agent, **change)

    def decided(self) -> list[str]:
        return [e.data.outcome for e in self.agent.session.events if isinstance(e, ApprovalDecidedEvent)]

    def asked_reasons(self) -> list[str]:
        return [e.data.reason for e in self.agent.session.events if isinstance(e, ApprovalAskedEvent)]


def text_of(result: ToolExecutionResult) -> str:
    block = result.content[0]
    assert type(block) is TextBlock
    return block.text


async def build(
    tmp_path: Path, config: dict[str, Any] | None = None, support: SandboxSupport = NO_SANDBOX, bash: bool = True
) -> Stack:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    root = Context()
    await root.plugin(SystemPrompt)
    await root.plugin(ToolRegistry)
    await root.plugin(LocalFileSystem, {"root": str(tmp_path / "unused")})
    await root.plugin(tool_fs)
    if bash:
        await root.plugin(executor_reporting(support), {})
        await root.plugin(tool_bash)
    await root.plugin(permissions, config or {})
    stack = Stack(root=root, ws=ws, agent=FakeAgent(str(ws)))

    async def probe(args: Any, execution: ToolExecution) -> Any:
        stack.probe_runs.append(args)
        return (text("probed"),)

    root[TOOLS].register(ToolDefinition(name="probe", description="p", parameters={"type": "object"}, execute=probe))
    root[TOOLS].register(
        ToolDefinition(name="look", description="l", parameters={"type": "object"}, execute=probe, read_only=True)
    )

    async def answerer(request: ApprovalRequest, next: Any) -> ApprovalDecision:
        stack.asked.append(request)
        if stack.answer is None:
            return await next()  # type: ignore[no-any-return]
        return await stack.answer(request)

    root.on(APPROVAL_REQUEST, answerer)
    return stack


@pytest.fixture
async def make(tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[Stack]]]:
    built: list[Stack] = []

    async def factory(
        config: dict[str, Any] | None = None, support: SandboxSupport = NO_SANDBOX, bash: bool = True
    ) -> Stack:
        stack = await build(tmp_path, config, support, bash)
        built.append(stack)
        return stack

    yield factory
    for stack in built:
        await stack.root.dispose()


def always(message: str | None = None) -> Answer:
    async def answer(request: ApprovalRequest) -> ApprovalDecision:
        return (
            ApprovalDecision(outcome="allowed-always")
            if message is None
            else ApprovalDecision(outcome="allowed-always", message=message)
        )

    return answer


def reply(outcome: Any, message: str | None = None) -> Answer:
    async def answer(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision(outcome=outcome, message=UNSET if message is None else message)

    return answer
