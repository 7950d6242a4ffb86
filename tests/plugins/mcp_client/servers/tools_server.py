"""A small MCP server for the tests, written with the ``mcp`` SDK.

``python tools_server.py [stdio]`` serves over stdin/stdout; ``python tools_server.py
http`` serves streamable HTTP on 127.0.0.1 at a free port and prints that port on
its first stdout line. ``$MCP_TEST_STATE`` names a directory where the server leaves
evidence for the tests: ``started-<pid>`` at start, ``hanging-<pid>-<tag>`` when a
hanging call began and ``cancelled-<pid>-<tag>`` when it was cancelled. A file
``variant`` there holding ``renamed`` swaps ``add`` for ``multiply`` and rewords
``echo`` (a server whose list changes between starts).
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path

import mcp_types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

STATE = Path(os.environ.get("MCP_TEST_STATE", "."))
VARIANT = (STATE / "variant").read_text().strip() if (STATE / "variant").exists() else ""

server = MCPServer("dsh-test-tools", log_level="WARNING")


@server.tool(description="Echo it." if VARIANT == "renamed" else "Echo the text back.")
def echo(text: str) -> str:
    return text


if VARIANT == "renamed":

    @server.tool(description="Multiply two integers.")
    def multiply(a: int, b: int) -> str:
        return str(a * b)

else:

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> str:
        return str(a + b)


if VARIANT == "renamed":

    @server.tool(description="Report this server's process id.")
    def pid(prefix: str = "") -> str:
        return prefix + str(os.getpid())

else:

    @server.tool(description="Report this server's process id.")
    def pid() -> str:
        return str(os.getpid())


@server.tool(description="Return a text, an image and an embedded resource.")
def mixed() -> list[mcp_types.ContentBlock]:
    return [
        mcp_types.TextContent(type="text", text="look:"),
        mcp_types.ImageContent(type="image", data="aGVsbG8=", mime_type="image/png"),
        mcp_types.EmbeddedResource(
            type="resource",
            resource=mcp_types.TextResourceContents(uri="file:///notes.txt", text="the notes"),
        ),
    ]


@server.tool(description="Always fails.")
def fail(reason: str) -> str:
    raise ToolError(f"it failed: {reason}")


@server.tool(description="Exits the server process in the middle of the call.")
def crash() -> str:
    os._exit(3)


@server.tool(description="Never returns; records its cancellation.")
async def hang(tag: str) -> str:
    (STATE / f"hanging-{os.getpid()}-{tag}").write_text("")
    try:
        await asyncio.Event().wait()
    except BaseException:
        (STATE / f"cancelled-{os.getpid()}-{tag}").write_text("cancelled")
        raise
    return "unreachable"


def _serve_http(sse: bool = False) -> None:
    import anyio
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # before the port is told: a client that connects at once waits in the backlog, never refused
    print(sock.getsockname()[1], flush=True)
    app = server.sse_app() if sse else server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    STATE.mkdir(parents=True, exist_ok=True)
    (STATE / f"started-{os.getpid()}").write_text("")
    if sys.argv[1:] in (["http"], ["sse"]):
        _serve_http(sse=sys.argv[1] == "sse")
    else:
        server.run("stdio")
