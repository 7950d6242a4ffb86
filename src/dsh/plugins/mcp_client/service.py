"""The ``mcp`` service: MCP servers whose tools the model can call.

:class:`McpServers` provides :data:`dsh.core.mcp.MCP` (the :class:`~dsh.core.mcp.McpHost`
seam). The servers of its config run for every session while the plugin is loaded;
:meth:`McpServers.start_for_session` runs more servers for one session only (what an
ACP client passes in ``session/new``), until the returned effect, or the caller's
fiber, is disposed.

**Tools.** Each server tool is registered in the tool registry as
``mcp__<server>__<tool>`` (:func:`~dsh.plugins.mcp_client.naming.public_tool_name`)
with the server's description and JSON schema, by the service on its own context:
one registration per public name, whichever scopes serve it. A call is routed to
the server of the calling agent's session when that session runs one by that name,
else to the server every session shares; a session-only tool is hidden from the
model requests of other sessions (an ``agent/request`` listener) and refused to
their calls as an unknown tool. A restarted server's list replaces the previous
one: unchanged tools keep their registration, so nothing is announced twice.

**Lifetime.** Disposing a scope (the plugin, or a session's effect) stops its
servers and returns once their processes are gone, then withdraws their tools.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from dsh.core.agent import AGENT_REQUEST, Agent
from dsh.core.errors import ToolArgsError, ToolNotFoundError
from dsh.core.llm import ContentBlock, GenerateOptions
from dsh.core.mcp import HttpServer, McpHost, StdioServer
from dsh.core.tools import TOOLS, ToolDefinition, ToolExecution
from dsh.kernel import Context, Effect
from dsh.plugins.mcp_client.config import McpConfig
from dsh.plugins.mcp_client.connection import ServerConnection
from dsh.plugins.mcp_client.content import result_content
from dsh.plugins.mcp_client.naming import public_tool_name

if TYPE_CHECKING:
    import mcp_types

Scope = str | None
"""A session id, or None for the servers every session shares."""


@dataclass(eq=False)
class _Binding:
    """One server's tool behind a public name, in one scope."""

    connection: ServerConnection
    tool: mcp_types.Tool


@dataclass(eq=False)
class _Slot:
    """One public name in the registry and the scopes that serve it."""

    definition: ToolDefinition
    effect: Effect
    bindings: dict[Scope, _Binding] = field(default_factory=dict)


def session_of(agent: object) -> str | None:
    """The id of ``agent``'s session, or None for a caller that is not an agent."""
    session_id = getattr(getattr(agent, "session", None), "id", None)
    return session_id if isinstance(session_id, str) else None


class McpServers(McpHost):
    """Runs MCP servers and bridges their tools (see the module docstring); needs ``tools``."""

    name = "mcp"
    Config = McpConfig
    inject: ClassVar[list[str]] = [TOOLS.name]
    """Loadable as a class plugin too; the module plugin also waits for the servers' first start."""

    def __init__(self, ctx: Context, config: McpConfig) -> None:
        super().__init__(ctx)
        self.config = config
        self._scopes: dict[Scope, dict[str, ServerConnection]] = {}
        self._published: dict[tuple[Scope, str], set[str]] = {}
        self._slots: dict[str, _Slot] = {}
        self._filtering = False
        ctx.effect(lambda: self._teardown, "mcp teardown")
        if config.servers:
            self._start(ctx, None, config.servers)

    # ------------------------------------------------------------------ public
    def start_for_session(self, session_id: str, servers: Mapping[str, StdioServer | HttpServer]) -> Effect:
        """Run ``servers`` for session ``session_id`` until the returned effect is disposed.

        The effect belongs to the caller's fiber; disposing it (awaitable) stops the
        servers and returns once their processes are gone. Raises ``ValueError`` when
        the session already runs a server by one of these names.
        """
        if not self._filtering:
            self._filtering = True
            self.own_ctx.on(AGENT_REQUEST, self._filter_request)
        return self._start(self.ctx, session_id, servers)

    def connections(self, session_id: str | None = None) -> dict[str, ServerConnection]:
        """The connections of one scope (None: the shared servers), by server name."""
        return dict(self._scopes.get(session_id, {}))

    async def wait_ready(self, session_id: str | None = None) -> dict[str, str]:
        """Wait until each server of the scope has connected or failed its first start; their states."""
        connections = self._scopes.get(session_id, {})
        states = await asyncio.gather(*(connection.wait_started() for connection in connections.values()))
        return dict(zip(connections, states, strict=True))

    def tool_names(self, session_id: str | None = None) -> list[str]:
        """The public names a session's agent sees (its own servers' and the shared ones), sorted."""
        return sorted(name for name, slot in self._slots.items() if _serves(slot, session_id))

    # ----------------------------------------------------------------- scopes
    def _start(self, owner: Context, scope: Scope, servers: Mapping[str, StdioServer | HttpServer]) -> Effect:
        scopes = self._scopes
        label = "mcp servers" if scope is None else f"mcp servers of session {scope}"

        def body() -> Callable[[], Awaitable[None]]:
            hosted = scopes.get(scope, {})
            taken = sorted(name for name in servers if name in hosted)
            if taken:
                raise ValueError(f"MCP servers {taken} already run for this session: give each server a unique name")
            hosted = scopes.setdefault(scope, hosted)
            started: list[ServerConnection] = []
            for server, spec in servers.items():
                connection = ServerConnection(
                    server, spec, self.config, on_tools=_ignore, on_down=_nothing, warn=self._warn
                )
                self._report_to(scope, connection)
                hosted[server] = connection
                started.append(connection)
            for connection in started:
                connection.start()

            async def stop() -> None:
                await asyncio.gather(*(connection.stop() for connection in started))
                for connection in started:
                    self._publish(scope, connection, ())
                    del hosted[connection.name]
                if not hosted:
                    del scopes[scope]

            return stop

        return owner.effect(body, label)

    def _report_to(self, scope: Scope, connection: ServerConnection) -> None:
        """Have ``connection`` publish its tools in ``scope`` (and withdraw them when it gives up)."""

        def on_tools(tools: Sequence[mcp_types.Tool]) -> None:
            self._publish(scope, connection, tools)

        def on_down() -> None:
            self._publish(scope, connection, ())

        connection.on_tools = on_tools
        connection.on_down = on_down

    async def _teardown(self) -> None:
        """Stop the servers of every scope (sessions' too) and withdraw their tools."""
        connections = [(scope, c) for scope, hosted in self._scopes.items() for c in hosted.values()]
        await asyncio.gather(*(connection.stop() for _, connection in connections))
        for scope, connection in connections:
            self._publish(scope, connection, ())

    def _warn(self, message: str) -> None:
        self.own_ctx.logger.warn("%s", message)

    # ------------------------------------------------------------------ tools
    def _publish(self, scope: Scope, connection: ServerConnection, tools: Sequence[mcp_types.Tool]) -> None:
        """Make ``tools`` the tools ``connection`` serves in ``scope`` (an empty list withdraws them)."""
        server = connection.name
        wanted: dict[str, mcp_types.Tool] = {}
        for tool in tools:
            public = public_tool_name(server, tool.name)
            if public in wanted:
                self._warn(f'mcp: server "{server}" lists the tool "{tool.name}" twice; the first one is used')
                continue
            wanted[public] = tool
        published = self._published.setdefault((scope, server), set())
        for public in sorted(published - wanted.keys()):
            self._unbind(scope, public)
        published.intersection_update(wanted)
        for public, tool in wanted.items():
            if self._bind(scope, public, _Binding(connection, tool)):
                published.add(public)
        if not published:
            del self._published[(scope, server)]

    def _bind(self, scope: Scope, public: str, binding: _Binding) -> bool:
        slot = self._slots.get(public)
        definition = self._definition(public, binding.tool)
        if slot is not None and slot.bindings.keys() - {scope}:
            slot.bindings[scope] = binding  # shared with other scopes: the first definition stays
            return True
        same = slot is not None and (slot.definition.description, slot.definition.parameters) == (
            definition.description,
            definition.parameters,
        )
        if slot is not None and same:
            slot.bindings[scope] = binding
            return True
        if slot is not None:
            self._drop(public, slot)
        try:
            effect = self.own_ctx[TOOLS].register(definition)
        except ValueError as error:
            self._warn(f"mcp: cannot register {public}: {error}")
            return False
        self._slots[public] = _Slot(definition, effect, {scope: binding})
        return True

    def _unbind(self, scope: Scope, public: str) -> None:
        slot = self._slots[public]
        del slot.bindings[scope]
        if not slot.bindings:
            self._drop(public, slot)

    def _drop(self, public: str, slot: _Slot) -> None:
        del self._slots[public]
        slot.effect()

    def _definition(self, public: str, tool: mcp_types.Tool) -> ToolDefinition:
        async def execute(arguments: Any, execution: ToolExecution) -> tuple[ContentBlock, ...]:
            return await self._execute(public, arguments, execution)

        return ToolDefinition(
            name=public,
            description=tool.description or tool.title or tool.name,
            parameters=tool.input_schema,
            execute=execute,
        )

    async def _execute(self, public: str, arguments: Any, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        slot = self._slots.get(public)
        binding = _binding_for(slot, session_of(execution.agent)) if slot is not None else None
        if binding is None:
            raise ToolNotFoundError(public)
        if not isinstance(arguments, dict):
            raise ToolArgsError([f"the arguments must be a JSON object, got {type(arguments).__name__}"])
        result = await binding.connection.call(binding.tool.name, arguments, execution.signal)
        return result_content(result)

    def _filter_request(
        self,
        agent: Agent,
        turn: int,
        step: int,
        options: GenerateOptions,
        next: Callable[[], Awaitable[GenerateOptions]],
    ) -> Awaitable[GenerateOptions]:
        """Hide the session-only tools of other sessions from ``agent``'s request."""
        if options.tools:
            session_id = session_of(agent)
            slots = self._slots
            kept = [tool for tool in options.tools if tool.name not in slots or _serves(slots[tool.name], session_id)]
            if len(kept) != len(options.tools):
                options.tools = kept or None
        return next()


def _ignore(_tools: Sequence[mcp_types.Tool]) -> None:
    """A placeholder ``on_tools`` (replaced before the connection starts)."""


def _nothing() -> None:
    """A placeholder ``on_down`` (replaced before the connection starts)."""


def _binding_for(slot: _Slot, session_id: str | None) -> _Binding | None:
    binding = slot.bindings.get(session_id) if session_id is not None else None
    return binding if binding is not None else slot.bindings.get(None)


def _serves(slot: _Slot, session_id: str | None) -> bool:
    return None in slot.bindings or (session_id is not None and session_id in slot.bindings)
