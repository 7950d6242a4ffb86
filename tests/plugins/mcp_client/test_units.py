"""Config, naming and content mapping of the MCP client, without a server."""

from __future__ import annotations

import asyncio
import sys

import mcp_types
import pytest
from pydantic import ValidationError

from dsh.core.llm import ImageBlock, TextBlock
from dsh.core.mcp import HttpServer, StdioServer
from dsh.plugins.mcp_client import (
    MAX_TOOL_NAME,
    McpConfig,
    McpToolError,
    McpUnavailableError,
    ServerConnection,
    content_block,
    public_tool_name,
    result_content,
    session_of,
)
from dsh.plugins.mcp_client.connection import LIST_PAGES, error_text, list_tools, server_stderr
from tests.plugins.mcp_client.helpers import SAFETY


def test_specs_are_told_apart_by_url_or_transport() -> None:
    config = McpConfig.model_validate(
        {
            "servers": {
                "a": {"command": "srv", "args": ["-v"], "env": {"K": "V"}, "cwd": "/tmp"},
                "b": {"url": "https://example.test/mcp", "headers": {"Authorization": "Bearer x"}},
                "c": {"transport": "stdio", "command": "other"},
            },
            "restartDelay": 1,
            "maxRestarts": 3,
            "callTimeout": 5,
        }
    )
    assert config.servers["a"] == StdioServer(command="srv", args=("-v",), env={"K": "V"}, cwd="/tmp")
    assert config.servers["b"] == HttpServer(url="https://example.test/mcp", headers={"Authorization": "Bearer x"})
    assert type(config.servers["c"]) is StdioServer
    assert (config.restart_delay, config.max_restarts, config.call_timeout) == (1, 3, 5)


@pytest.mark.parametrize(
    ("servers", "fragment"),
    [
        ({"bad name": {"command": "x"}}, "must be 1-32 letters"),
        ({"a": {"url": "ftp://host"}}, "http:// or https://"),
        ({"a": {"command": "x", "url": "http://h"}}, "Extra inputs"),
        ({"a": {}}, "command"),
    ],
)
def test_bad_server_specs_are_refused_with_the_fix(servers: dict[str, object], fragment: str) -> None:
    with pytest.raises(ValidationError) as caught:
        McpConfig.model_validate({"servers": servers})
    assert fragment in str(caught.value)


def test_a_config_that_is_not_a_mapping_of_servers_is_left_to_pydantic() -> None:
    with pytest.raises(ValidationError):
        McpConfig.model_validate({"servers": ["a"]})
    assert McpConfig.model_validate({}).servers == {}


def test_public_names_are_safe_short_and_distinct() -> None:
    assert public_tool_name("gh", "create_issue") == "mcp__gh__create_issue"
    dotted = public_tool_name("gh", "issues.create")
    assert dotted.startswith("mcp__gh__issues_create_")
    assert len(dotted) == len("mcp__gh__issues_create_") + 12
    assert dotted != public_tool_name("gh", "issues_create")
    long = public_tool_name("server", "x" * 100)
    assert len(long) == MAX_TOOL_NAME
    assert long != public_tool_name("server", "x" * 101)
    assert public_tool_name("server", "x" * 100) == long


def test_content_blocks_of_every_kind() -> None:
    assert content_block(mcp_types.TextContent(type="text", text="t")) == TextBlock(text="t")
    image = mcp_types.ImageContent(type="image", data="AAA=", mime_type="image/jpeg")
    assert content_block(image) == ImageBlock(url="data:image/jpeg;base64,AAA=", mime_type="image/jpeg")
    blob = mcp_types.EmbeddedResource(
        type="resource", resource=mcp_types.BlobResourceContents(uri="file:///a.bin", blob="AAAA")
    )
    assert content_block(blob) == TextBlock(
        text="[resource file:///a.bin (binary data, 4 base64 characters) not shown]"
    )
    typed = mcp_types.EmbeddedResource(
        type="resource",
        resource=mcp_types.BlobResourceContents(uri="file:///a.pdf", blob="AA", mime_type="application/pdf"),
    )
    assert "application/pdf" in content_block(typed).text  # type: ignore[union-attr]
    link = mcp_types.ResourceLink(type="resource_link", name="readme", uri="file:///README")
    assert content_block(link) == TextBlock(text="[resource link: readme file:///README]")
    audio = mcp_types.AudioContent(type="audio", data="AA", mime_type="audio/wav")
    assert content_block(audio) == TextBlock(text="[audio (audio/wav) not shown]")


def test_results_structured_content_and_errors() -> None:
    structured = mcp_types.CallToolResult(content=[], structured_content={"n": 1, "é": True})
    assert result_content(structured) == (TextBlock(text='{"n":1,"é":true}'),)
    assert result_content(mcp_types.CallToolResult(content=[])) == ()
    failed = mcp_types.CallToolResult(
        content=[
            mcp_types.TextContent(type="text", text="one"),
            mcp_types.ImageContent(type="image", data="AA", mime_type="image/png"),
            mcp_types.TextContent(type="text", text="two"),
        ],
        is_error=True,
    )
    with pytest.raises(McpToolError) as caught:
        result_content(failed)
    assert str(caught.value) == "one\ntwo"
    with pytest.raises(McpToolError) as silent:
        result_content(mcp_types.CallToolResult(content=[], is_error=True))
    assert "without a message" in str(silent.value)


def test_unavailable_errors_name_the_state() -> None:
    assert "is restarting" in str(McpUnavailableError("t", "restarting"))
    assert "given up" in str(McpUnavailableError("t", "failed"))


async def test_a_connection_that_never_started_refuses_calls_and_stops_at_once() -> None:
    connection = ServerConnection(
        "t", StdioServer(command="x"), McpConfig(), on_tools=lambda _tools: None, on_down=lambda: None, warn=print
    )
    with pytest.raises(McpUnavailableError):
        await connection.call("echo", {}, None)
    await connection.stop()
    assert connection.state == "stopped"
    assert await connection.wait_started() == "stopped"


def test_error_text_reads_exception_groups() -> None:
    group = ExceptionGroup("outer", [ValueError("a"), ExceptionGroup("inner", [OSError()])])
    assert error_text(group) == "a; OSError"


def test_session_of_reads_the_agents_session_id() -> None:
    assert session_of(None) is None
    assert session_of(type("A", (), {"session": type("S", (), {"id": "s1"})()})()) == "s1"


def _connection(spec: StdioServer | None = None, **config: object) -> ServerConnection:
    return ServerConnection(
        "t",
        spec or StdioServer(command="/bin/false"),
        McpConfig.model_validate(config),
        on_tools=lambda _tools: None,
        on_down=lambda: None,
        warn=lambda _message: None,
    )


async def test_stop_right_after_start_runs_no_generation() -> None:
    connection = _connection()
    connection.start()
    await connection.stop()
    assert connection.state == "stopped"
    assert connection.generations == 0


async def test_stop_during_the_backoff_ends_the_supervisor() -> None:
    connection = _connection(restartDelay=60, maxRestarts=5)
    connection.start()
    async with asyncio.timeout(SAFETY):
        assert await connection.wait_started() == "restarting"
    await connection.stop()
    assert connection.state == "stopped"


class _Pages:
    """A stand-in for the SDK client's paging (the pager is what is under test)."""

    def __init__(self, pages: int | None) -> None:
        self.pages = pages
        self.calls: list[str | None] = []

    async def list_tools(self, *, cursor: str | None = None) -> object:
        self.calls.append(cursor)
        index = len(self.calls)
        more = self.pages is None or index < self.pages
        tool = mcp_types.Tool(name=f"t{index}", input_schema={"type": "object"})
        return mcp_types.ListToolsResult(tools=[tool], next_cursor=f"c{index}" if more else None)


async def test_tool_lists_are_read_page_by_page_up_to_a_cap() -> None:
    three = _Pages(3)
    assert [tool.name for tool in await list_tools(three)] == ["t1", "t2", "t3"]  # type: ignore[arg-type]
    assert three.calls == [None, "c1", "c2"]
    endless = _Pages(None)
    assert len(await list_tools(endless)) == LIST_PAGES  # type: ignore[arg-type]


def test_server_stderr_falls_back_to_the_process_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stderr", None)
    assert server_stderr() is sys.__stderr__
