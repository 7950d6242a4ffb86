"""``mcp``: tools of MCP servers (Model Context Protocol), over stdio or streamable HTTP.

A module plugin (YAML name ``mcp``): load ``dsh.plugins.mcp_client`` itself with the
servers to run. Loading returns once each configured server has connected or failed
its first start, so the first model request already sees their tools::

    - id: mcp
      name: mcp
      config:
        servers:
          files: {command: npx, args: [-y, "@modelcontextprotocol/server-filesystem", /tmp]}
          search: {url: "http://127.0.0.1:8000/mcp", headers: {Authorization: "Bearer ..."}}

Each server's tools appear as ``mcp__<server>__<tool>``; a server that dies is
restarted with backoff; unloading the plugin stops every server process. The SDK
(the ``mcp`` package) is imported only once a server starts.
"""

from dsh.core.tools import TOOLS
from dsh.kernel import Context
from dsh.plugins.mcp_client.config import McpConfig
from dsh.plugins.mcp_client.connection import ConnectionState, McpUnavailableError, ServerConnection
from dsh.plugins.mcp_client.content import McpToolError, content_block, result_content
from dsh.plugins.mcp_client.naming import MAX_TOOL_NAME, public_tool_name
from dsh.plugins.mcp_client.service import McpServers, session_of

name = "mcp"
inject = [TOOLS.name]
Config = McpConfig


async def apply(ctx: Context, config: McpConfig) -> McpServers:
    """Provide the ``mcp`` service on ``ctx`` and wait for the first start of its servers."""
    service = McpServers(ctx, config)
    await service.wait_ready()
    return service


__all__ = [
    "MAX_TOOL_NAME",
    "Config",
    "ConnectionState",
    "McpConfig",
    "McpServers",
    "McpToolError",
    "McpUnavailableError",
    "ServerConnection",
    "apply",
    "content_block",
    "inject",
    "name",
    "public_tool_name",
    "result_content",
    "session_of",
]
