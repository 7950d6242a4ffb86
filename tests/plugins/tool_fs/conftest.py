"""Fixtures for the tool-fs tests: a workspace, the real fs-local and tool-fs, a call shortcut."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import dsh.plugins.tool_fs as tool_fs
from dsh.core.llm import UNSET, TextBlock
from dsh.core.session import Session, SessionHeader
from dsh.core.system_prompt import SystemPrompt
from dsh.core.tools import TOOLS, ToolExecution, ToolExecutionResult, ToolRegistry
from dsh.kernel import AbortSignal, Context
from dsh.plugins.fs_local import LocalFileSystem


class FakeAgent:
    """Just enough of an agent: a session (its id keys what was read) with an optional cwd."""

    def __init__(self, session_id: str = "s1", cwd: str | None = None) -> None:
        header = SessionHeader(version=1, id=session_id, created_at=0, cwd=UNSET if cwd is None else cwd)
        self.session = Session(session_id, header=header)


@dataclass
class Stack:
    root: Context
    ws: Path
    agent: FakeAgent
    calls: list[str] = field(default_factory=list)

    @property
    def tools(self) -> ToolRegistry:
        return self.root[TOOLS]

    async def call(
        self, name: str, arguments: Any, agent: object | None = None, signal: AbortSignal | None = None
    ) -> ToolExecutionResult:
        call_id = f"call-{len(self.calls) + 1}"
        self.calls.append(call_id)
        who = self.agent if agent is None else agent
        execution = ToolExecution(call_id=call_id, name=name, arguments=arguments, agent=who, signal=signal)
        return await self.tools.execute(execution)

    async def text(self, name: str, arguments: Any, agent: object | None = None) -> str:
        result = await self.call(name, arguments, agent)
        assert result.is_error is False, result.content
        return only_text(result)

    async def error(self, name: str, arguments: Any, agent: object | None = None) -> str:
        result = await self.call(name, arguments, agent)
        assert result.is_error is True, result.content
        return only_text(result)


def only_text(result: ToolExecutionResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert type(block) is TextBlock
    return block.text


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    ws = tmp_path / "ws"
    ws.mkdir()
    root = Context()
    await root.plugin(SystemPrompt)
    await root.plugin(ToolRegistry)
    await root.plugin(LocalFileSystem, {"root": str(tmp_path / "unused")})
    await root.plugin(tool_fs)
    yield Stack(root=root, ws=ws, agent=FakeAgent(cwd=str(ws)))
    await root.dispose()
