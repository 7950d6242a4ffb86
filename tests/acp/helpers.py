"""The bridge test stack: real services, JSONL persistence, the bridge mounted over memory.

``async with bridge_stack(tmp_path, script) as stack:`` builds the real stack of
:class:`dsh.testing.harness.Harness` (a scripted model ``mock`` and the invariants
oracle), loads JSONL persistence rooted in ``tmp_path/sessions`` (and, with
``bash=True``, the real local bash executor and bash tools), then mounts the bridge
the way an embedding harness would: through ``ctx.plugin`` with the plugin's own
``inject`` list, over an in-memory transport. ``stack.client`` is connected.

At exit the client disconnects (the server sees end of input and tears down), the
connection is awaited to its end, and everything is disposed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dsh.acp as acp
from dsh.acp import AcpBridge, LineTransport, MemoryTransport, memory_transport_pair
from dsh.core.agent import AGENT_STATUS, AGENTS, Agent, AgentRegistry
from dsh.core.persistence import SESSION_PERSISTENCE, SessionPersistence
from dsh.kernel import Context, Fiber, PluginSpec
from dsh.plugins import tool_bash
from dsh.plugins.bash_local import LocalBashExecutor
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl
from dsh.testing.harness import Harness
from dsh.testing.scripted import ScriptEntry
from tests.acp.client import AcpTestClient

CWD = os.getcwd()

MOCK_MODEL_OPTIONS: dict[str, Any] = {
    "configOptions": [
        {
            "id": "model",
            "name": "Model",
            "description": "The model this session's requests use",
            "category": "model",
            "type": "select",
            "currentValue": "mock",
            "options": [{"value": "mock", "name": "mock"}],
        }
    ]
}
"""What a session of the bridge stack (one model, ``mock``) answers beside its id: the model selector."""


@dataclass
class BridgeStack:
    harness: Harness
    ctx: Context
    client: AcpTestClient
    server: LineTransport
    acp_fiber: Fiber
    root: Path

    @property
    def bridge(self) -> AcpBridge:
        bridge: AcpBridge = self.acp_fiber.instance
        return bridge

    @property
    def agents(self) -> AgentRegistry:
        return self.ctx[AGENTS]

    @property
    def persistence(self) -> SessionPersistence:
        return self.ctx[SESSION_PERSISTENCE]

    def agent(self, session_id: str) -> Agent:
        agent = self.agents.get(session_id)
        assert agent is not None, f"no agent {session_id}"
        return agent

    @property
    def updates(self) -> list[dict[str, Any]]:
        return self.client.updates

    async def close_client_transport(self) -> None:
        """An editor disconnect: the server reads end of input and tears down."""
        self.client.close()
        await self.bridge.wait_closed()

    async def session(self, cwd: str = CWD, terminal_output: bool = False) -> str:
        """``initialize`` then ``session/new``; returns the session id."""
        await self.client.initialize(terminal_output=terminal_output)
        return await self.client.new_session(cwd)


async def mount_bridge(ctx: Context, config: dict[str, Any], transport: LineTransport, name: str = "acp-test") -> Fiber:
    """Load the bridge as a child of ``ctx`` through the real inject path."""
    return await ctx.plugin(
        PluginSpec(
            name=name, inject=acp.inject, apply=lambda inner, _raw: acp.apply(inner, config, transport=transport)
        )
    )


@contextlib.asynccontextmanager
async def bridge_stack(
    root: Path,
    script: Sequence[ScriptEntry] = (),
    *,
    config: dict[str, Any] | None = None,
    bash: bool = False,
    server_transport: Callable[[MemoryTransport], LineTransport] | None = None,
    loop_config: dict[str, Any] | None = None,
) -> AsyncIterator[BridgeStack]:
    async with Harness(script, loop_config=loop_config) as harness:
        ctx = harness.ctx
        sessions_root = root / "sessions"
        await ctx.plugin(SessionPersistenceJsonl, {"root": str(sessions_root)})
        if bash:
            await ctx.plugin(LocalBashExecutor, {"timeoutMs": 10000})
            await ctx.plugin(tool_bash)
        server_end, client_end = memory_transport_pair()
        server: LineTransport = server_end if server_transport is None else server_transport(server_end)
        fiber = await mount_bridge(ctx, {"model": "mock", **(config or {})}, server)
        client = AcpTestClient(client_end)
        client.start()
        stack = BridgeStack(harness, ctx, client, server, fiber, sessions_root)
        try:
            yield stack
        finally:
            await client.aclose()


async def wait_status(ctx: Context, agent: Agent, status: str) -> None:
    """Return once ``agent`` reports ``status`` (at once if it already has it)."""
    if agent.status == status:
        return
    reached: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def listener(subject: Agent, value: str) -> None:
        if subject is agent and value == status and not reached.done():
            reached.set_result(None)

    stop = ctx.on(AGENT_STATUS, listener)
    try:
        await reached
    finally:
        stop()


def saw_chunk(count: int = 1) -> Callable[[AcpTestClient], bool]:
    """A ``wait_for`` predicate: the client has received ``count`` agent_message_chunk updates."""

    def seen(client: AcpTestClient) -> bool:
        return sum(1 for u in client.updates if u["sessionUpdate"] == "agent_message_chunk") >= count

    return seen
