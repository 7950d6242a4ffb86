"""Helpers of the MCP client tests."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dsh.core.mcp import MCP, StdioServer
from dsh.core.tools import ToolExecution, ToolExecutionResult
from dsh.kernel import AbortSignal, Fiber
from dsh.plugins import mcp_client
from dsh.plugins.mcp_client import McpServers
from dsh.testing.harness import Harness

SERVER = Path(__file__).parent / "servers" / "tools_server.py"


def stdio_spec(state: Path) -> StdioServer:
    """The test server over stdio, leaving its evidence in ``state``."""
    return StdioServer(command=sys.executable, args=(str(SERVER),), env={"MCP_TEST_STATE": str(state)})


SAFETY = 30.0
"""Seconds a test waits for an observable state before failing (a safety net, never asserted)."""


async def boot(h: Harness, config: dict[str, Any]) -> tuple[Fiber, McpServers]:
    """Load the ``mcp`` plugin with ``config`` and wait until its servers are up."""
    async with asyncio.timeout(SAFETY):
        fiber = await h.ctx.plugin(mcp_client, config)
    service = h.ctx.get(MCP)
    assert isinstance(service, McpServers)
    return fiber, service


async def call(
    h: Harness, name: str, arguments: Any, *, agent: object = None, signal: AbortSignal | None = None
) -> ToolExecutionResult:
    """Run one call through the real registry."""
    return await h.tools.execute(
        ToolExecution(call_id="c1", name=name, arguments=arguments, agent=agent, signal=signal)
    )


def text(result: ToolExecutionResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def eventually(predicate: Callable[[], bool]) -> None:
    """Return once ``predicate()`` holds (polling; fails after the safety timeout)."""
    async with asyncio.timeout(SAFETY):
        while not predicate():
            await asyncio.sleep(0.02)


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return status.rsplit(")", 1)[1].split()[0] != "Z"


def starts(state: Path) -> list[int]:
    """The pids of the test servers started with ``state``."""
    return sorted(int(path.name.split("-")[1]) for path in state.glob("started-*"))


def mcp_tools(h: Harness) -> list[str]:
    return sorted(schema.name for schema in h.tools.schemas() if schema.name.startswith("mcp__"))


class FakeAgent:
    """Just enough of an agent for routing: a ``session`` with an ``id``."""

    def __init__(self, session_id: str) -> None:
        self.session = type("S", (), {"id": session_id})()
