"""ACP sessions with MCP servers: validated, run for their session only, stopped with it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from acp.exceptions import RequestError

from dsh.acp.mcp_servers import local_name, mcp_capabilities, session_servers
from dsh.core.mcp import HttpServer, SseServer, StdioServer
from dsh.plugins import mcp_client
from dsh.plugins.mcp_client import McpServers
from dsh.testing.scripted import text_response, tool_call_response
from tests.acp.client import RpcResponseError
from tests.acp.helpers import CWD, MOCK_MODEL_OPTIONS, bridge_stack
from tests.acp.test_load import persist_turn
from tests.plugins.mcp_client.helpers import SERVER, alive

ALL = frozenset({"stdio", "http", "sse"})


def stdio_entry(name: str, state: Path) -> dict[str, Any]:
    return {
        "name": name,
        "command": sys.executable,
        "args": [str(SERVER)],
        "env": [{"name": "MCP_TEST_STATE", "value": str(state)}],
    }


def test_entries_become_specs_by_local_name() -> None:
    servers = session_servers(
        [
            {"name": "my files", "command": "srv", "args": ["-x"], "env": [{"name": "K", "value": "V"}]},
            {"name": "my files", "command": "other"},
            {"type": "http", "name": "web", "url": "http://127.0.0.1:1/mcp", "headers": [{"name": "A", "value": "b"}]},
            {"type": "sse", "name": "events", "url": "http://127.0.0.1:1/sse", "headers": []},
        ],
        ALL,
    )
    assert servers == {
        "my_files": StdioServer(command="srv", args=("-x",), env={"K": "V"}),
        "my_files_2": StdioServer(command="other"),
        "web": HttpServer(url="http://127.0.0.1:1/mcp", headers={"A": "b"}),
        "events": SseServer(url="http://127.0.0.1:1/sse"),
    }
    assert servers["events"].transport == "sse"


@pytest.mark.parametrize(
    ("entries", "transports", "fragment"),
    [
        ([{"type": "sse", "name": "s", "url": "http://h", "headers": []}], frozenset({"stdio", "http"}), "sse servers"),
        ([{"type": "http", "name": "h", "url": "http://h", "headers": []}], frozenset({"stdio"}), "use a stdio server"),
        ([{"name": "x"}], ALL, "mcpServers:"),
        ([{"type": "acp", "name": "a", "id": "x"}], ALL, "acp servers are not supported"),
        ([{"type": "http", "name": "h", "url": "ftp://h"}], ALL, 'MCP server "h"'),
    ],
)
def test_bad_entries_are_invalid_params(entries: list[Any], transports: frozenset[str], fragment: str) -> None:
    with pytest.raises(RequestError) as caught:
        session_servers(entries, transports)
    assert fragment in str(caught.value)


def test_local_names_are_valid_and_distinct() -> None:
    assert local_name("", set()) == "server"
    long = "x" * 40
    assert local_name(long, set()) == "x" * 32
    assert local_name(long, {"x" * 32}) == "x" * 30 + "_2"
    assert local_name("a", {"a", "a_2"}) == "a_3"
    assert mcp_capabilities(frozenset({"stdio"})) == {"http": False, "sse": False}
    assert mcp_capabilities(ALL) == {"http": True, "sse": True}


async def test_session_new_runs_the_servers_for_that_session(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    script = [tool_call_response("c1", "mcp__tools__pid", {}), text_response("done")]
    async with bridge_stack(tmp_path, script) as stack:
        fiber = await stack.ctx.plugin(mcp_client, {})
        hello = await stack.client.initialize()
        assert hello["agentCapabilities"]["mcpCapabilities"] == {"http": True, "sse": True}
        session_id = await stack.client.new_session(CWD, mcpServers=[stdio_entry("tools", state)])
        service = fiber.instance
        assert isinstance(service, McpServers)
        assert "mcp__tools__echo" in service.tool_names(session_id)
        assert service.tool_names("someone-else") == []
        assert (await stack.client.prompt(session_id, "which pid?"))["stopReason"] == "end_turn"
        results = [
            u for u in stack.updates if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed"
        ]
        pid = int(results[0]["content"][0]["content"]["text"])
        assert alive(pid)
        await stack.close_client_transport()
        await stack.acp_fiber.dispose()
        assert not alive(pid)
        assert service.tool_names(session_id) == []


async def test_a_server_that_fails_to_start_still_opens_the_session(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path) as stack:
        await stack.ctx.plugin(mcp_client, {"restartDelay": 0.01, "maxRestarts": 0})
        await stack.client.initialize()
        session_id = await stack.client.new_session(CWD, mcpServers=[{"name": "bad", "command": "/bin/false"}])
        assert stack.agent(session_id).session.id == session_id


async def test_bad_servers_are_refused_before_a_session_opens(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path) as stack:
        await stack.ctx.plugin(mcp_client, {})
        await stack.client.initialize()
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.new_session(CWD, mcpServers=[{"type": "ws", "name": "s", "url": "ws://h"}])
        assert "ws servers are not supported" in str(caught.value)
        assert stack.agents.list() == []


async def test_session_load_runs_the_servers_for_the_resumed_session(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    session_id = await persist_turn(tmp_path, "remember this", "remembered answer")
    async with bridge_stack(tmp_path) as loader:
        fiber = await loader.ctx.plugin(mcp_client, {})
        await loader.client.initialize()
        request = {"sessionId": session_id, "cwd": CWD, "mcpServers": [stdio_entry("tools", state)]}
        assert await loader.client.request("session/load", request) == MOCK_MODEL_OPTIONS
        service = fiber.instance
        assert isinstance(service, McpServers)
        assert "mcp__tools__echo" in service.tool_names(session_id)
        (pid,) = [int(path.name.split("-")[1]) for path in state.glob("started-*")]
        await loader.close_client_transport()
        await loader.acp_fiber.dispose()
        assert not alive(pid)
