"""Opening a session's agent: workspace checks, its MCP servers, its owner fiber, create or resume.

Each ACP session's agent is created through a small child fiber of the bridge
(``acp-session``): disposing the bridge fiber disposes those children, which
unregisters and stops the agents (caller attribution, SPEC §1.2); an opening that
must be abandoned disposes just its own child. The MCP servers a client passes with
``session/new`` / ``session/load`` / ``session/fork`` run for that session only
(through the ``mcp`` plugin's host, owned by the session's fiber), started before the
answer.

``mcpServers`` is read from the raw params, not from the SDK model: the schema skips
an entry it cannot read, while dsh refuses it with a message naming the entry
(:func:`~dsh.acp.mcp_servers.session_servers`).
"""

from __future__ import annotations

import os.path
from collections.abc import Callable
from typing import Any, cast

from dsh.acp.config import Config, agent_options
from dsh.acp.mcp_servers import session_servers
from dsh.acp.rpc import invalid_params
from dsh.core.agent import AGENTS, Agent, AgentRegistry, CreateAgentOptions, ResumeAgentOptions
from dsh.core.llm import UnsetType
from dsh.core.mcp import MCP, HttpServer, McpHost, StdioServer
from dsh.core.persistence import SESSION_PERSISTENCE
from dsh.core.session import SessionHeader, SessionMeta
from dsh.kernel import Context, Fiber, PluginSpec, ServiceHandle, unwrap

Servers = dict[str, StdioServer | HttpServer]
"""A session's MCP servers by local name."""


def _hold(ctx: Context, config: object) -> None:
    """``apply`` of an ``acp-session`` fiber: it only owns what is created through it."""


def header_cwd(header: SessionHeader) -> str | None:
    """The workspace a session header names, or None."""
    return None if isinstance(header.cwd, UnsetType) else header.cwd


def check_header_cwd(session_id: str, persisted: str | None, requested: str) -> None:
    """Refuse a load whose persisted workspace is unknown or differs from the requested one."""
    if not isinstance(persisted, str) or not os.path.isabs(persisted):
        raise invalid_params(
            f"session {session_id} has no absolute persisted cwd; cannot determine its workspace "
            "(it predates per-session cwd, or was created without one)"
        )
    if os.path.normpath(persisted) != os.path.normpath(requested):
        raise invalid_params(f"session {session_id} cwd mismatch: persisted {persisted}, requested {requested}")


def check_workspace(cwd: str, additional_directories: list[str] | None) -> None:
    """Refuse a relative ``cwd`` and any additional directory."""
    if not os.path.isabs(cwd):
        raise invalid_params(f"cwd must be an absolute path: {cwd}")
    if additional_directories:
        raise invalid_params("additionalDirectories is not supported in this MVP")


class SessionOpener:
    """Opens agents for the bridge on ``ctx`` (the bridge's context); ``closed`` says the bridge closed."""

    def __init__(self, ctx: Context, config: Config, closed: Callable[[], bool], warn: Callable[[str], None]) -> None:
        self._ctx = ctx
        self._config = config
        self._closed = closed
        self._warn = warn
        self._agents: AgentRegistry = unwrap(ctx[AGENTS])
        self._persistence = ctx[SESSION_PERSISTENCE]

    def mcp_servers(self, raw: Any) -> Servers:
        """The MCP servers the request's raw params ask for (none when it passes none)."""
        entries = raw.get("mcpServers") if isinstance(raw, dict) else None
        if not entries:
            return {}
        host = self._ctx.get(MCP)
        if host is None:
            raise invalid_params("mcpServers needs the mcp plugin: add `- {id: mcp, name: mcp}` to the plugin tree")
        return session_servers(entries, host.transports)

    async def _start_mcp(self, session_id: str, servers: Servers, owner: Fiber) -> None:
        """Run ``servers`` for the session, owned by its fiber, and wait for their first start."""
        if not servers:
            return
        host = self._ctx.get(MCP)
        assert host is not None  # mcp_servers found it, and the session's fiber holds no service back
        scoped = cast(McpHost, ServiceHandle(unwrap(host), owner.ctx))  # what it starts belongs to the session
        scoped.start_for_session(session_id, servers)
        for name, state in (await scoped.wait_ready(session_id)).items():
            if state != "connected":
                self._warn(f'acp: MCP server "{name}" of session {session_id} did not start ({state})')

    async def _open_owner(self) -> Fiber:
        """A child fiber to own one session's agent (ready to use when this returns)."""
        return await self._ctx.plugin(PluginSpec(name="acp-session", apply=_hold))

    def _agents_for(self, owner: Fiber) -> AgentRegistry:
        """The registry as seen by ``owner``: what it creates belongs to that fiber."""
        return cast(AgentRegistry, ServiceHandle(self._agents, owner.ctx))

    async def create(self, session_id: str, cwd: str, servers: Servers, closed_error: Exception) -> tuple[Agent, Fiber]:
        """A fresh agent whose session header cwd is ``cwd``; raises ``closed_error`` if the bridge closes meanwhile."""
        owner = await self._open_owner()
        try:
            await self._start_mcp(session_id, servers, owner)
            if self._closed():  # the bridge closed while the owner (or its MCP servers) started
                raise closed_error
            agent = self._agents_for(owner).create(
                CreateAgentOptions(
                    agent_id=session_id,
                    session_id=session_id,
                    meta=SessionMeta(cwd=cwd),
                    agent_options=agent_options(self._config),
                )
            )
        except BaseException:
            await owner.dispose()
            raise
        return agent, owner

    async def resume(self, session_id: str, servers: Servers) -> tuple[Agent, Fiber]:
        """The stored session ``session_id`` resumed on an agent of its own child fiber."""
        owner = await self._open_owner()
        try:
            await self._start_mcp(session_id, servers, owner)
            agent = await self._agents_for(owner).resume(
                ResumeAgentOptions(
                    agent_id=session_id, resume_session_id=session_id, agent_options=agent_options(self._config)
                )
            )
            if self._closed():
                raise invalid_params("connection closed during session/load")
        except BaseException:
            await owner.dispose()
            raise
        return agent, owner

    async def check_persisted_cwd(self, session_id: str, cwd: str) -> None:
        """Refuse an unknown stored session, or one whose stored workspace is not ``cwd``."""
        for header in await self._persistence.list():
            if header.id == session_id:
                check_header_cwd(session_id, header_cwd(header), cwd)
                return
        if not await self._persistence.has(session_id):
            raise invalid_params(f"unknown session: {session_id}")
