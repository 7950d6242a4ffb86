"""(issue acceptance) The official ACP SDK client opens a session with an MCP server over real pipes.

``dsh --config tree.yml acp`` runs with the ``mcp`` plugin and the DeepSeek adapter
pointed at the local wire server, which asks for the MCP tool ``mcp__tools__echo``;
the tool card reports the server's answer, and once the client closes, no server
process is left.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any, cast

import pytest
from acp.schema import EnvVariable, McpServerStdio, ToolCallProgress

import acp
from dsh.testing.wire import Finish as WireFinish
from dsh.testing.wire import Reply, WireServer, text_reply, tool_call
from tests.plugins.mcp_client.helpers import SERVER, alive, eventually, starts

PROJECT = Path(__file__).resolve().parents[2]


class Recorder:
    def __init__(self) -> None:
        self.updates: list[Any] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)


def tree(tmp_path: Path) -> Path:
    path = tmp_path / "tree.yml"
    entries = [
        {"id": "base", "name": "include", "config": {"path": str(PROJECT / "examples" / "base.yml")}},
        {"id": "mcp", "name": "mcp"},
        {"id": "agent-loop", "name": "agent-loop", "config": {"agents": []}},
        {"id": "persistence", "name": "session-persistence-jsonl", "config": {"root": str(tmp_path / "sessions")}},
    ]
    path.write_text(json.dumps(entries))
    return path


async def test_session_new_with_an_mcp_server_from_the_sdk_client(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    state = tmp_path / "state"
    state.mkdir()
    script = [
        Reply(
            [*tool_call(0, "call_mcp", "mcp__tools__echo", json.dumps({"text": "from mcp"})), WireFinish("tool_calls")]
        ),
        text_reply("echoed"),
    ]
    async with WireServer(script) as wire:
        env = {**os.environ, "DEEPSEEK_API_KEY": "dummy", "DEEPSEEK_BASE_URL": wire.base_url}
        recorder = Recorder()
        server = McpServerStdio(
            name="tools",
            command=sys.executable,
            args=[str(SERVER)],
            env=[EnvVariable(name="MCP_TEST_STATE", value=str(state))],
        )
        command = ["-m", "dsh.cli", "--config", str(tree(tmp_path)), "--model", "deepseek-v4-flash", "acp"]
        async with acp.spawn_agent_process(
            cast(acp.Client, recorder), sys.executable, *command, env=env, cwd=tmp_path
        ) as (
            conn,
            proc,
        ):
            hello = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            assert hello.agent_capabilities is not None
            assert hello.agent_capabilities.mcp_capabilities is not None
            assert hello.agent_capabilities.mcp_capabilities.http is True
            session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[server])
            (pid,) = starts(state)
            assert alive(pid)
            done = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("echo it")])
            assert done.stop_reason == "end_turn"
            progress = [update for update in recorder.updates if isinstance(update, ToolCallProgress)]
            assert progress
            assert progress[-1].status == "completed"
            assert "from mcp" in json.dumps(progress[-1].model_dump(mode="json"))
            proc.terminate()
            assert await proc.wait() == 0
        await eventually(lambda: not alive(pid))
    tools = {tool["function"]["name"] for tool in wire.requests[0].json["tools"]}
    assert "mcp__tools__echo" in tools
