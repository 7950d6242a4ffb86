"""Session-event builders and tool fixtures shared by the pure streaming tests.

Events are the typed values a session hands out: built directly for the kinds the
bridge translates, decoded from their JSON (:func:`event`, as a log line would be)
for the rest, so unknown variants and untyped events arrive exactly as they would
from a log.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from dsh.core.llm import ContentBlock, MessageSource, StreamChunk, TextBlock, UserSource, parse_stream_chunk, text
from dsh.core.session import (
    AssistantChunkData,
    AssistantChunkEvent,
    MessageData,
    SessionEvent,
    ToolCallData,
    ToolCallEvent,
    ToolResultData,
    ToolResultEvent,
    UserMessageEvent,
    parse_session_event,
)
from dsh.core.tools import (
    ToolCallPresentation,
    ToolDefinition,
    ToolResult,
    ToolResultPresentation,
    ToolTerminal,
)


def event(kind: str, data: Any, seq: int = 0) -> SessionEvent:
    """The event a log line ``{"type": kind, "seq", "time": 0, "data"}`` decodes to."""
    return parse_session_event({"type": kind, "seq": seq, "time": 0, "data": data})


def chunk(chunk_value: StreamChunk | dict[str, Any], seq: int = 0) -> AssistantChunkEvent:
    value = chunk_value if not isinstance(chunk_value, dict) else parse_stream_chunk(chunk_value)
    return AssistantChunkEvent(seq=seq, time=0, data=AssistantChunkData(turn=1, step=1, chunk=value))


def tool_call(call_id: str, name: str, arguments: Any, seq: int = 0) -> ToolCallEvent:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCallEvent(seq=seq, time=0, data=ToolCallData(turn=1, step=1, call_id=call_id, name=name, arguments=raw))


def tool_result(call_id: str, content: Sequence[ContentBlock], is_error: bool = False, seq: int = 0) -> ToolResultEvent:
    return ToolResultEvent(
        seq=seq,
        time=0,
        data=ToolResultData(turn=1, step=1, call_id=call_id, content=tuple(content), is_error=is_error),
    )


def user_message(
    content: Sequence[ContentBlock], source: MessageSource | None = None, seq: int = 0
) -> UserMessageEvent:
    data = MessageData(content=tuple(content), source=UserSource() if source is None else source)
    return UserMessageEvent(seq=seq, time=0, data=data)


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
        content=(text(args.get("description", "")),),
        terminal=ToolTerminal(cwd=args.get("workdir")),
    )


def shell_present_result(args: Any, result: ToolResult) -> ToolResultPresentation | None:
    if len(result.content) != 1:
        return None
    block = result.content[0]
    if type(block) is not TextBlock:
        return None
    raw = block.text
    fenced = (text("```console\n" + raw.rstrip("\n") + "\n```"),)
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
