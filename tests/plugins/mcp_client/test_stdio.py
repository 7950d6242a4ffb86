"""The MCP client against the real test server over stdio (a subprocess per test)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from dsh.core.llm import ImageBlock, TextBlock
from dsh.core.tools import define_tool
from dsh.kernel import AbortController
from dsh.testing.harness import Harness
from tests.plugins.mcp_client.helpers import alive, boot, call, eventually, mcp_tools, starts, stdio_spec, text

TOOLS = ["mcp__t__add", "mcp__t__crash", "mcp__t__echo", "mcp__t__fail", "mcp__t__hang", "mcp__t__mixed", "mcp__t__pid"]


def config(state: Path, **more: object) -> dict[str, object]:
    return {"servers": {"t": stdio_spec(state).model_dump()}, **more}


async def test_tools_are_registered_with_their_schemas_and_called(state: Path) -> None:
    async with Harness() as h:
        _, service = await boot(h, config(state))
        assert mcp_tools(h) == TOOLS
        echo = h.tools.get("mcp__t__echo")
        assert echo is not None
        assert echo.description == "Echo the text back."
        assert echo.parameters["properties"]["text"]["type"] == "string"
        assert echo.parameters["required"] == ["text"]
        result = await call(h, "mcp__t__echo", {"text": "héllo"})
        assert result.is_error is False
        assert result.content == (TextBlock(text="héllo"),)
        assert text(await call(h, "mcp__t__add", {"a": 2, "b": 3})) == "5"
        assert service.connections()["t"].state == "connected"
        assert service.tool_names() == TOOLS


async def test_content_blocks_are_mapped(state: Path) -> None:
    async with Harness() as h:
        await boot(h, config(state))
        result = await call(h, "mcp__t__mixed", {})
        assert result.content == (
            TextBlock(text="look:"),
            ImageBlock(url="data:image/png;base64,aGVsbG8=", mime_type="image/png"),
            TextBlock(text="the notes"),
        )


async def test_an_error_result_and_bad_arguments_are_tool_errors(state: Path) -> None:
    async with Harness() as h:
        await boot(h, config(state))
        failed = await call(h, "mcp__t__fail", {"reason": "on purpose"})
        assert failed.is_error is True
        assert "it failed: on purpose" in text(failed)
        assert failed.error
        assert failed.error.code == "MCP_TOOL_ERROR"
        wrong = await call(h, "mcp__t__echo", "not an object")
        assert wrong.is_error is True
        assert "must be a JSON object" in text(wrong)
        invalid = await call(h, "mcp__t__add", {"a": "x"})
        assert invalid.is_error is True


async def test_unloading_the_plugin_stops_the_server_process(state: Path) -> None:
    async with Harness() as h:
        fiber, _ = await boot(h, config(state))
        pid = int(text(await call(h, "mcp__t__pid", {})))
        assert alive(pid)
        await fiber.dispose()
        assert not alive(pid)
        assert mcp_tools(h) == []


async def test_a_crash_mid_call_fails_the_call_and_the_server_comes_back_once(state: Path) -> None:
    async with Harness() as h:
        changes: list[list[str]] = []
        from dsh.core.tools import TOOLS_CHANGE

        h.ctx.on(TOOLS_CHANGE, lambda: changes.append(mcp_tools(h)))
        _, service = await boot(h, config(state, restartDelay=0.05, maxRestartDelay=0.05))
        first = int(text(await call(h, "mcp__t__pid", {})))
        changes.clear()
        crashed = await call(h, "mcp__t__crash", {})
        assert crashed.is_error is True
        connection = service.connections()["t"]
        await eventually(lambda: connection.generations == 2 and connection.state == "connected")
        assert mcp_tools(h) == TOOLS
        assert changes == []  # the same tools: nothing was withdrawn or registered again
        second = int(text(await call(h, "mcp__t__pid", {})))
        assert second != first
        assert starts(state) == sorted([first, second])
        assert not alive(first)


async def test_a_changed_list_after_a_restart_replaces_the_tools(state: Path) -> None:
    async with Harness() as h:
        _, service = await boot(h, config(state, restartDelay=0.05))
        (state / "variant").write_text("renamed")
        await call(h, "mcp__t__crash", {})
        connection = service.connections()["t"]
        await eventually(lambda: connection.generations == 2 and connection.state == "connected")
        assert "mcp__t__multiply" in mcp_tools(h)
        assert "mcp__t__add" not in mcp_tools(h)
        echo = h.tools.get("mcp__t__echo")
        assert echo is not None
        assert echo.description == "Echo it."
        pid = h.tools.get("mcp__t__pid")
        assert pid is not None
        assert "prefix" in pid.parameters["properties"]
        assert text(await call(h, "mcp__t__multiply", {"a": 4, "b": 5})) == "20"


async def test_abort_reaches_a_hanging_call(state: Path) -> None:
    async with Harness() as h:
        await boot(h, config(state))
        pid = int(text(await call(h, "mcp__t__pid", {})))
        controller = AbortController()
        pending = asyncio.ensure_future(call(h, "mcp__t__hang", {"tag": "abort"}, signal=controller.signal))
        await eventually(lambda: (state / f"hanging-{pid}-abort").exists())
        controller.abort("user cancelled")
        result = await pending
        assert result.is_error is True
        assert "user cancelled" in text(result)
        await eventually(lambda: (state / f"cancelled-{pid}-abort").exists())
        assert text(await call(h, "mcp__t__echo", {"text": "still up"})) == "still up"


async def test_cancelling_the_calling_task_reaches_the_server(state: Path) -> None:
    async with Harness() as h:
        await boot(h, config(state))
        pid = int(text(await call(h, "mcp__t__pid", {})))
        pending = asyncio.ensure_future(call(h, "mcp__t__hang", {"tag": "task"}))
        await eventually(lambda: (state / f"hanging-{pid}-task").exists())
        pending.cancel()
        await asyncio.wait({pending})
        assert pending.cancelled()
        await eventually(lambda: (state / f"cancelled-{pid}-task").exists())


async def test_a_server_that_never_starts_gives_up_and_withdraws_nothing_twice(tmp_path: Path) -> None:
    async with Harness() as h:
        spec = {"command": "/bin/false"}
        _, service = await boot(h, {"servers": {"bad": spec}, "restartDelay": 0.01, "maxRestarts": 2})
        connection = service.connections()["bad"]
        await eventually(lambda: connection.state == "failed")
        assert connection.generations == 0
        assert mcp_tools(h) == []
        result = await call(h, "mcp__bad__x", {})
        assert result.is_error is True


async def test_a_tool_name_taken_by_another_tool_is_skipped(state: Path) -> None:
    async with Harness() as h:

        async def run(_args: object, _execution: object) -> list[TextBlock]:
            return [TextBlock(text="native")]

        h.tools.register(define_tool("mcp__t__echo", "squatter", {}, run))
        await boot(h, config(state))
        assert text(await call(h, "mcp__t__echo", {})) == "native"
        assert text(await call(h, "mcp__t__add", {"a": 1, "b": 1})) == "2"


async def test_a_start_that_takes_too_long_counts_as_failed(caplog: pytest.LogCaptureFixture) -> None:
    async with Harness() as h:
        silent = {"command": "/bin/sleep", "args": ["30"]}  # starts, never answers the handshake
        _, service = await boot(h, {"servers": {"t": silent}, "startTimeout": 0.5, "maxRestarts": 0})
        assert service.connections()["t"].state == "failed"
        assert "did not start within" in caplog.text
        assert mcp_tools(h) == []
