"""Helpers for tool tests: a booted root with the prompt and tool services, and small tools."""

from __future__ import annotations

from typing import Any

from dsh.core.llm import ContentBlock, text
from dsh.core.system_prompt import SystemPrompt
from dsh.core.tools import ToolDefinition, ToolExecution, ToolRegistry
from dsh.kernel import Context


async def boot() -> Context:
    """A root context with ``SystemPrompt`` and ``ToolRegistry`` loaded and active."""
    ctx = Context()
    await ctx.plugin(SystemPrompt)
    await ctx.plugin(ToolRegistry)
    return ctx


def text_tool(name: str, reply: str = "ok", **fields: Any) -> ToolDefinition:
    """A raw tool that answers ``reply`` as one text block."""

    async def execute(args: Any, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        return (text(reply),)

    return ToolDefinition(
        name=name,
        description=f"the {name} tool",
        parameters={"type": "object", "properties": {}},
        execute=execute,
        **fields,
    )


def failing_tool(name: str, error: BaseException) -> ToolDefinition:
    """A raw tool whose every call raises ``error``."""

    async def execute(args: Any, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        raise error

    return ToolDefinition(name=name, description="fails", parameters={"type": "object"}, execute=execute)


def call(name: str, arguments: Any = None, call_id: str = "c1") -> ToolExecution:
    """A call of tool ``name`` (arguments default to ``{}``)."""
    return ToolExecution(call_id=call_id, name=name, arguments={} if arguments is None else arguments)
