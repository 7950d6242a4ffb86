"""The ``acp`` module plugin and its entry points (``run_acp``, ``serve_stdio``)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

import dsh.acp as acp
from dsh.acp import Config, StdioTransport, memory_transport_pair, run_acp, serve_stdio
from dsh.kernel import ConfigError, Context, FiberState, KernelError, PluginSpec, describe
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response
from tests.acp.client import AcpTestClient, message_text
from tests.acp.helpers import CWD


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Harness]:
    """The services the bridge needs (no bridge yet)."""
    async with Harness([text_response("over the wire")]) as harness:
        await harness.ctx.plugin(SessionPersistenceJsonl, {"root": str(tmp_path / "sessions")})
        yield harness


@pytest.fixture
def fds() -> Iterator[list[int]]:
    opened: list[int] = []
    yield opened
    for fd in opened:
        os.close(fd)


def pipe(opened: list[int]) -> tuple[int, int]:
    read, write = os.pipe()
    opened.extend([read, write])
    return read, write


def test_the_package_is_a_module_plugin_named_acp() -> None:
    """(§14) namespace plugin: name ``acp``, the four injected services, a pydantic Config"""
    info = describe(acp)
    assert info.name == "acp"
    assert info.inject == ("agents", "sessions", "session_persistence", "tools")
    assert info.config_model is Config
    config = Config.model_validate({"model": "m", "systemPrompt": "s", "agentName": "n", "agentVersion": "v"})
    assert (config.model, config.system_prompt, config.agent_name, config.agent_version) == ("m", "s", "n", "v")
    defaults = Config()
    assert (defaults.agent_name, defaults.agent_version) == ("deepseek-harness-acp", "0.0.1")


async def test_unknown_config_keys_reject_the_plugin(stack: Harness) -> None:
    """(§14) config is validated before the bridge starts; a typo names the field"""
    with pytest.raises(ConfigError, match="agentNmae"):
        await stack.ctx.plugin(acp, {"agentNmae": "x"})


async def test_loaded_by_name_it_serves_stdio_and_closes_it_when_disposed(
    stack: Harness, fds: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """(§14) the YAML path: no transport given, the plugin serves stdin/stdout and owns them"""
    in_read, in_write = pipe(fds)
    out_read, out_write = pipe(fds)
    with open(in_read, "rb", closefd=False) as fake_in, open(out_write, "wb", closefd=False) as fake_out:
        monkeypatch.setattr("sys.stdin", fake_in)
        monkeypatch.setattr("sys.stdout", fake_out)
        fiber = await stack.ctx.plugin(acp, {"agentName": "from-yaml"})
    client = await StdioTransport.open(out_read, in_write)
    client.write_line(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}))
    frame = json.loads(await client.read_line() or "null")
    assert frame["result"]["agentInfo"]["name"] == "from-yaml"
    await fiber.dispose()
    assert fiber.instance.closed
    fds.remove(out_write)
    os.close(out_write)  # the process's own stdout goes too: now the bridge's closed duplicate was the last writer
    assert await client.read_line() is None
    await client.aclose()


async def test_run_acp_serves_one_client_until_it_disconnects(stack: Harness) -> None:
    """(§14) run_acp mounts the bridge, serves, and after the disconnect unloads it with its agents"""
    server, client_end = memory_transport_pair()
    serving = asyncio.ensure_future(run_acp(stack.ctx, {"model": "mock"}, transport=server))
    client = AcpTestClient(client_end)
    client.start()
    await client.initialize()
    session_id = await client.new_session(CWD)
    assert await client.prompt(session_id, "hi") == {"stopReason": "end_turn"}
    assert message_text(client.updates) == "over the wire"
    assert stack.agents.get(session_id) is not None
    await client.aclose()
    await serving
    assert stack.agents.list() == []


async def test_run_acp_refuses_to_start_without_its_services(fds: list[int]) -> None:
    """(§14) missing services are named; the transport is closed"""
    ctx = Context()
    server, client_end = memory_transport_pair()
    with pytest.raises(KernelError, match="agents, sessions, session_persistence, tools"):
        await run_acp(ctx, transport=server)
    assert server.closed
    assert await client_end.read_line() is None
    with pytest.raises(KernelError, match="load the plugins that provide them"):
        await serve_stdio(ctx)
    await ctx.dispose()


async def test_run_acp_closes_the_transport_when_the_bridge_cannot_start(stack: Harness) -> None:
    """(§14) a bad config fails the start; the transport is not left open"""
    server, _client_end = memory_transport_pair()
    with pytest.raises(Exception, match="agentNmae"):
        await run_acp(stack.ctx, {"agentNmae": "x"}, transport=server)
    assert server.closed


async def test_serve_stdio_speaks_ndjson_over_real_pipes_until_end_of_input(stack: Harness, fds: list[int]) -> None:
    """(§14.1) stdout carries only frames, one per line; stdin EOF ends the service after teardown"""
    in_read, in_write = pipe(fds)
    out_read, out_write = pipe(fds)
    serving = asyncio.ensure_future(serve_stdio(stack.ctx, Config(model="mock"), stdin=in_read, stdout=out_write))
    client = await StdioTransport.open(out_read, in_write)

    async def call(request_id: int, method: str, params: Any) -> Any:
        client.write_line(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
        while True:
            frame = json.loads(await client.read_line() or "null")
            if frame.get("id") == request_id:
                return frame

    assert (await call(1, "initialize", {"protocolVersion": 1}))["result"]["protocolVersion"] == 1
    session_id = (await call(2, "session/new", {"cwd": CWD, "mcpServers": []}))["result"]["sessionId"]
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "hi"}]}
    assert (await call(3, "session/prompt", prompt))["result"] == {"stopReason": "end_turn"}
    await client.aclose()  # closes our duplicate of the write end of stdin ...
    fds.remove(in_write)
    os.close(in_write)  # ... and the original: the server reads end of file
    await serving
    assert stack.agents.list() == []  # the bridge fiber went, and its agents with it


async def test_the_bridge_instance_reports_its_state(stack: Harness) -> None:
    """(§14.2) the fiber's instance is the bridge: closed flag, live session ids"""
    server, client_end = memory_transport_pair()
    fiber = await stack.ctx.plugin(
        PluginSpec(
            name="acp-test", inject=acp.inject, apply=lambda inner, _raw: acp.apply(inner, None, transport=server)
        )
    )
    bridge = fiber.instance
    assert fiber.state is FiberState.ACTIVE
    assert not bridge.closed
    assert bridge.session_ids == []
    client = AcpTestClient(client_end)
    client.start()
    assert (await client.initialize())["agentInfo"]["name"] == "deepseek-harness-acp"
    await client.aclose()
    await bridge.wait_closed()
    assert bridge.closed
