"""echo-tool: the demo's one tool, ``echo``, which hands its text back uppercased (SPEC §16.2).

A module plugin referenced from ``tree.yml`` by its path; it needs the ``tools`` service.
Unloading it unregisters the tool.
"""

from __future__ import annotations

from typing import TypedDict

from dsh.core.llm import ContentBlock, text
from dsh.core.tools import TOOLS, ToolExecution, define_tool
from dsh.kernel import Context

name = "echo-tool"
inject = [TOOLS.name]


class EchoArgs(TypedDict):
    text: str


async def echo(args: EchoArgs, _execution: ToolExecution) -> tuple[ContentBlock, ...]:
    """``ECHO: <TEXT UPPERCASED>``."""
    return (text(f"ECHO: {args['text'].upper()}"),)


ECHO_TOOL = define_tool(
    "echo",
    "Echo the given text back, uppercased.",
    {"text": {"type": "string", "required": True, "description": "The text to echo."}},
    echo,
)


def apply(ctx: Context, _config: object) -> None:
    """Register ``echo`` on behalf of this plugin's fiber."""
    ctx[TOOLS].register(ECHO_TOOL)
