"""The MCP host seam: ``MCP`` names the service that runs MCP servers for sessions.

A front door that receives servers with a session (ACP ``session/new``) hands them
to :meth:`McpHost.start_for_session` without knowing which plugin runs them; the
``mcp`` plugin provides the implementation. :attr:`McpHost.transports` says which
kinds of server the host can run, so a front door advertises no more than that.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping

from dsh.core.mcp.types import HttpServer, StdioServer
from dsh.kernel import Context, Effect, Service, ServiceKey


class McpHost(Service, ABC):
    """Abstract base of the MCP server host, provided as ``ctx[MCP]``."""

    transports: frozenset[str] = frozenset({"stdio", "http", "sse"})
    """The server transports this host can run."""

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx, MCP)

    @abstractmethod
    def start_for_session(self, session_id: str, servers: Mapping[str, StdioServer | HttpServer]) -> Effect:
        """Run ``servers`` (by local name) for one session until the returned effect is disposed.

        The effect belongs to the caller's fiber; disposing it stops the servers and
        resolves once their processes are gone. Raises ``ValueError`` for a name the
        session already uses.
        """

    @abstractmethod
    async def wait_ready(self, session_id: str | None = None) -> dict[str, str]:
        """Wait until each server of the scope has connected or failed its first start; their states."""


MCP: ServiceKey[McpHost] = ServiceKey("mcp")
