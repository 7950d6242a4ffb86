"""The MCP host seam: ``MCP`` names the service running MCP servers, the specs its vocabulary."""

from dsh.core.mcp.host import MCP, McpHost
from dsh.core.mcp.types import SERVER_NAME, HttpServer, ServerSpec, SseServer, StdioServer

__all__ = ["MCP", "SERVER_NAME", "HttpServer", "McpHost", "ServerSpec", "SseServer", "StdioServer"]
