"""Session-event builders and tool fixtures shared by the pure streaming tests."""

from __future__ import annotations

import json
import re
from typing import Any

from dsh.core.llm import ContentBlock
from dsh.core.tools import (
    ToolCallPresentation,
    ToolDefinition,
    ToolResult,
    ToolResultPresentation,
    ToolTerminal,
)


def event(kind: str, data: Any, seq: int = 0) -> dict[str, Any]:
    return {"type": kind, "seq": seq, "time": 0, "data": data}


def chunk(chunk_value: dict[str, Any]) -> dict[str, Any]:
    return event("assistant/chunk", {"turn": 1, "step": 1, "chunk": chunk_value})


def tool_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return event("tool/call", {"turn": 1, "step": 1, "callId": call_id, "name": name, "arguments": raw})


def tool_result(call_id: str, content: list[ContentBlock], is_error: bool = False) -> dict[str, Any]:
    return event("tool/result", {"turn": 1, "step": 1, "callId": call_id, "content": content, "isError": is_error})


def text(value: str) -> ContentBlock:
    return {"type": "text", "text": value}


async def _execute(args: Any, execution: Any) -> list[ContentBlock]:
    return [text("ran")]


_EXIT = re.compile(r"\n\[exit code: (\d+)\]$")
_SIGNAL = re.compile(r"\n\[killed by signal: ([^\]\n]+)\]$")


def shell_present_call(args: Any) -> ToolCallPresentation | None:
    """Presents like the bash tool: command title, description block, terminal card."""
    if not isinstance(args, dict) or "command" not in args:
        return None
    return ToolCallPresentation(
        title=args["command"],
        kind="execute",
        raw_input=args["command"],
        content=[text(args.get("description", ""))],
        terminal=ToolTerminal(cwd=args.get("workdir")),
    )


def shell_present_result(args: Any, result: ToolResult) -> ToolResultPresentation | None:
    if len(result.content) != 1 or result.content[0]["type"] != "text":
        return None
    raw: str = result.content[0]["text"]
    fenced = [text("```console\n" + raw.rstrip("\n") + "\n```")]
    if result.is_error:
        return ToolResultPresentation(content=fenced)
    signal = _SIGNAL.search(raw)
    if signal is not None:
        return ToolResultPresentation(content=fenced, terminal=ToolTerminal(output=raw, signal=signal.group(1)))
    code = _EXIT.search(raw)
    exit_code = int(code.group(1)) if code is not None else 0
    return ToolResultPresentation(content=fenced, terminal=ToolTerminal(output=raw, exit_code=exit_code))


def shell_tool(name: str = "shell") -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description="run a command",
        parameters={"type": "object", "properties": {}},
        execute=_execute,
        present_call=shell_present_call,
        present_result=shell_present_result,
    )


def plain_tool(name: str) -> ToolDefinition:
    return ToolDefinition(
        name=name, description="no presentation", parameters={"type": "object", "properties": {}}, execute=_execute
    )
