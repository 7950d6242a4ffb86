"""The MCP client against the test server over streamable HTTP and over HTTP+SSE on 127.0.0.1."""

from __future__ import annotations

from dsh.core.llm import TextBlock
from dsh.testing.harness import Harness
from tests.plugins.mcp_client.helpers import boot, call, mcp_tools, text


async def test_http_tools_are_listed_and_called(http_url: str) -> None:
    async with Harness() as h:
        fiber, service = await boot(h, {"servers": {"web": {"url": http_url, "headers": {"X-Test": "1"}}}})
        assert "mcp__web__echo" in mcp_tools(h)
        assert service.connections()["web"].spec.transport == "http"
        assert (await call(h, "mcp__web__echo", {"text": "over http"})).content == (TextBlock(text="over http"),)
        failed = await call(h, "mcp__web__fail", {"reason": "remote"})
        assert failed.is_error is True
        assert "remote" in text(failed)
        await fiber.dispose()
        assert mcp_tools(h) == []


async def test_sse_tools_are_listed_and_called(sse_url: str) -> None:
    async with Harness() as h:
        fiber, service = await boot(h, {"servers": {"events": {"transport": "sse", "url": sse_url}}})
        assert "mcp__events__echo" in mcp_tools(h)
        assert service.connections()["events"].spec.transport == "sse"
        assert (await call(h, "mcp__events__echo", {"text": "over sse"})).content == (TextBlock(text="over sse"),)
        failed = await call(h, "mcp__events__fail", {"reason": "remote"})
        assert failed.is_error is True
        assert "remote" in text(failed)
        await fiber.dispose()
        assert mcp_tools(h) == []
