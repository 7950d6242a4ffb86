"""Helpers for the tool-bash tests: a booted stack, a stand-in agent, a call shortcut."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import dsh.plugins.tool_bash as tool_bash
from dsh.core.bash import BASH, BashExecutor
from dsh.core.llm import UNSET, ContentBlock, MessageSource, TextBlock
from dsh.core.session import Session, SessionHeader
from dsh.core.system_prompt import SystemPrompt
from dsh.core.tools import TOOLS, ToolExecution, ToolExecutionResult, ToolRegistry
from dsh.kernel import AbortSignal, Context, Fiber, unwrap
from dsh.plugins.bash_local import LocalBashExecutor


class FakeAgent:
    """Just enough of an agent for the tools: a session header with an optional cwd, and
    an ``inject`` that records (or raises ``fail``)."""

    def __init__(self, agent_id: str = "agent", cwd: str | None = None, fail: Exception | None = None) -> None:
        self.id = agent_id
        header = SessionHeader(version=1, id=f"{agent_id}-session", created_at=0, cwd=UNSET if cwd is None else cwd)
        self.session = Session(f"{agent_id}-session", header=header)
        self.fail = fail
        self.injected: list[tuple[Sequence[ContentBlock], MessageSource | None]] = []

    def inject(self, content: Sequence[ContentBlock], *, source: MessageSource | None = None) -> None:
        if self.fail is not None:
            raise self.fail
        self.injected.append((content, source))


@dataclass
class Stack:
    """A root with SystemPrompt, ToolRegistry, an executor and tool-bash loaded."""

    root: Context
    executor: BashExecutor
    executor_fiber: Fiber
    tool_fiber: Fiber
    calls: list[str] = field(default_factory=list)

    @property
    def tools(self) -> ToolRegistry:
        return self.root[TOOLS]

    async def call(
        self, name: str, arguments: Any, agent: object | None = None, signal: AbortSignal | None = None
    ) -> ToolExecutionResult:
        call_id = f"call-{len(self.calls) + 1}"
        self.calls.append(call_id)
        execution = ToolExecution(call_id=call_id, name=name, arguments=arguments, agent=agent, signal=signal)
        return await self.tools.execute(execution)

    async def text(self, name: str, arguments: Any, agent: object | None = None, **options: Any) -> str:
        """The single text block of a successful call."""
        result = await self.call(name, arguments, agent, **options)
        assert result.is_error is False, result.content
        return only_text(result)

    async def error(self, name: str, arguments: Any, agent: object | None = None, **options: Any) -> str:
        """The text of an ``isError`` result."""
        result = await self.call(name, arguments, agent, **options)
        assert result.is_error is True, result.content
        return only_text(result)


def only_text(result: ToolExecutionResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert type(block) is TextBlock
    return block.text


async def boot(
    root: Context,
    executor: object = LocalBashExecutor,
    config: dict[str, Any] | None = None,
    spill_dir: str | None = None,
) -> Stack:
    await root.plugin(SystemPrompt)
    await root.plugin(ToolRegistry)
    executor_fiber = await root.plugin(executor, config)
    service = unwrap(root[BASH])
    if isinstance(service, LocalBashExecutor):
        service.internals.grace_ms = 200
        service.internals.spill_dir = spill_dir
    tool_fiber = await root.plugin(tool_bash)
    return Stack(root=root, executor=service, executor_fiber=executor_fiber, tool_fiber=tool_fiber)
