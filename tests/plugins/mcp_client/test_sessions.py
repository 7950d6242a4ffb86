"""Servers scoped to one session: hidden from other sessions, routed per session, stopped with it."""

from __future__ import annotations

from pathlib import Path

import mcp_types
import pytest

from dsh.core.llm import GenerateOptions, TextBlock
from dsh.core.mcp import MCP
from dsh.kernel import PluginSpec
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response, tool_call_response
from tests.plugins.mcp_client.helpers import FakeAgent, alive, boot, call, eventually, mcp_tools, stdio_spec, text


def _hold(_ctx: object, _config: object) -> None:
    return None


async def test_a_session_server_is_seen_and_called_by_that_session_only(state: Path, tmp_path: Path) -> None:
    async with Harness() as h:
        _, service = await boot(h, {})
        mine, other = h.agent("mine"), h.agent("other")
        owner = await h.ctx.plugin(PluginSpec(name="session-owner", apply=_hold))
        scoped = owner.ctx.get(MCP)
        assert scoped is not None
        scoped.start_for_session(mine.session.id, {"own": stdio_spec(state)})
        assert (await service.wait_ready(mine.session.id)) == {"own": "connected"}
        assert service.tool_names(mine.session.id) == [name for name in mcp_tools(h) if name.startswith("mcp__own__")]
        assert service.tool_names(other.session.id) == []

        h.model.push(tool_call_response("c1", "mcp__own__echo", {"text": "scoped"}), text_response("done"))
        mine.send([TextBlock(text="go")])
        await mine.when_idle()
        h.model.push(text_response("hi"))
        other.send([TextBlock(text="hello")])
        await other.when_idle()
        seen_by_mine = {tool.name for tool in h.model.requests[0].tools or []}
        seen_by_other = {tool.name for tool in h.model.requests[2].tools or []}
        assert "mcp__own__echo" in seen_by_mine
        assert not any(name.startswith("mcp__own__") for name in seen_by_other)
        results = [event for event in mine.session.events if event.type == "tool/result"]
        assert text_of_event(results[0]) == "scoped"

        refused = await call(h, "mcp__own__echo", {"text": "x"}, agent=FakeAgent(other.session.id))
        assert refused.is_error is True
        assert "unknown tool" in text(refused)
        pid = int(text(await call(h, "mcp__own__pid", {}, agent=FakeAgent(mine.session.id))))
        await owner.dispose()
        assert not alive(pid)
        assert mcp_tools(h) == []
        assert service.connections(mine.session.id) == {}


def text_of_event(event: object) -> str:
    content = getattr(getattr(event, "data", None), "content", ())
    return "".join(getattr(block, "text", "") for block in content)


async def test_a_shared_and_a_session_server_of_one_name_route_by_session(state: Path, tmp_path: Path) -> None:
    other_state = tmp_path / "other"
    other_state.mkdir()
    async with Harness() as h:
        _, service = await boot(h, {"servers": {"t": stdio_spec(state).model_dump()}})
        effect = service.start_for_session("s1", {"t": stdio_spec(other_state)})
        await service.wait_ready("s1")
        shared = int(text(await call(h, "mcp__t__pid", {})))
        own = int(text(await call(h, "mcp__t__pid", {}, agent=FakeAgent("s1"))))
        elsewhere = int(text(await call(h, "mcp__t__pid", {}, agent=FakeAgent("s2"))))
        assert shared == elsewhere != own
        assert service.tool_names("s1") == service.tool_names()
        with pytest.raises(ValueError, match="already run"):
            service.start_for_session("s1", {"t": stdio_spec(other_state)})
        more = service.start_for_session("s1", {"u": stdio_spec(other_state)})
        await effect()
        assert not alive(own)
        assert list(service.connections("s1")) == ["u"]
        await more()
        assert int(text(await call(h, "mcp__t__pid", {}, agent=FakeAgent("s1")))) == shared
        await eventually(lambda: "s1" not in service._scopes)


async def test_unloading_the_plugin_stops_session_servers_too(state: Path) -> None:
    async with Harness() as h:
        fiber, service = await boot(h, {})
        service.start_for_session("s1", {"t": stdio_spec(state)})
        await service.wait_ready("s1")
        pid = int(text(await call(h, "mcp__t__pid", {}, agent=FakeAgent("s1"))))
        await fiber.dispose()
        assert not alive(pid)
        assert mcp_tools(h) == []


async def test_a_tool_listed_twice_is_registered_once_and_requests_without_tools_pass(
    state: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with Harness() as h:
        _, service = await boot(h, {})
        effect = service.start_for_session("s1", {"t": stdio_spec(state)})
        await service.wait_ready("s1")
        connection = service.connections("s1")["t"]
        tool = mcp_types.Tool(name="dup", description="twice", input_schema={"type": "object"})
        connection.on_tools((tool, tool))
        assert 'lists the tool "dup" twice' in caplog.text
        assert service.tool_names("s1") == ["mcp__t__dup"]
        options = GenerateOptions(model="m", messages=[])

        async def done() -> GenerateOptions:
            return options

        assert await service._filter_request(FakeAgent("s2"), 1, 1, options, done) is options  # type: ignore[arg-type]
        assert options.tools is None
        await effect()
