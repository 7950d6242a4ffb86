"""acp-agent over real stdio (SPEC §16.4 ``acp.e2e``): the live tree in a real process.

The live tree (``tree.yml``) runs with the real ``llm-deepseek`` adapter. Keyless tests
point it at the local wire server (``dsh.testing.wire``) through ``DEEPSEEK_BASE_URL``
with a dummy key; the ``deepseek`` variants reach the real API and are skipped without
``DEEPSEEK_API_KEY``.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from dsh.testing.wire import Finish as WireFinish
from dsh.testing.wire import Reply, TextDelta, WireServer, text_reply, tool_call
from tests.examples.acp.client import PipeClient
from tests.examples.acp.harness import child_env, shut_down, spawn_agent
from tests.examples.acp.normalize import json_lines

REAL_KEY = os.environ.get("DEEPSEEK_API_KEY")
INITIALIZE = {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}}}


def bash_call(call_id: str, command: str, description: str) -> Reply:
    arguments = json.dumps({"command": command, "description": description})
    return Reply([*tool_call(0, call_id, "bash", arguments, pieces=3), WireFinish("tool_calls")])


@pytest.fixture
async def wire() -> AsyncIterator[WireServer]:
    async with WireServer() as server:
        yield server


def live_env(tmp_path: Path, base_url: str | None, key: str) -> dict[str, str]:
    overrides = {"DEEPSEEK_API_KEY": key, "DSH_SNAPSHOT_SESSIONS_ROOT": str(tmp_path / "sessions")}
    if base_url is not None:
        overrides["DEEPSEEK_BASE_URL"] = base_url
    env = child_env(overrides, tmp_path)
    if base_url is None:
        env.pop("DEEPSEEK_BASE_URL", None)
    return env


def workspace(tmp_path: Path) -> Path:
    path = (tmp_path / "workspace").resolve()
    path.mkdir(exist_ok=True)
    return path


async def test_emits_only_framed_json_rpc_on_stdout(tmp_path: Path, wire: WireServer) -> None:
    """acp-agent over real stdio (no key required) — emits only framed JSON-RPC on stdout"""
    async with spawn_agent(workspace(tmp_path), live_env(tmp_path, wire.base_url, "dummy")) as client:
        client.send_line('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}')
        await client.wait_for(lambda: len(client.frames) == 1)
        assert await shut_down(client) == 0
    raw = client.raw.decode("utf-8")
    assert raw.endswith("\n")
    frames = json_lines(raw)  # every line parses as JSON
    assert len(frames) == len([line for line in raw.split("\n") if line])
    assert frames[0]["id"] == 1
    assert frames[0]["result"]["agentInfo"] == {"name": "deepseek-harness-acp", "version": "0.0.1"}
    assert client.bad_lines == []


async def test_session_new_succeeds_over_real_stdio_no_model_call(tmp_path: Path, wire: WireServer) -> None:
    """acp-agent over real stdio (no key required) — session/new succeeds over real stdio (no model call)"""
    cwd = workspace(tmp_path)
    async with spawn_agent(cwd, live_env(tmp_path, wire.base_url, "dummy")) as client:
        await client.request("initialize", INITIALIZE)
        result = await client.request("session/new", {"cwd": str(cwd), "mcpServers": []})
        assert await shut_down(client) == 0
    assert isinstance(result["sessionId"], str)
    assert result["sessionId"]
    assert wire.requests == []


def model_env(model: str, tmp_path: Path, wire: WireServer) -> dict[str, str]:
    if model == "deepseek":
        if not REAL_KEY:
            pytest.skip("needs DEEPSEEK_API_KEY (a real model call)")
        return live_env(tmp_path, None, REAL_KEY)
    return live_env(tmp_path, wire.base_url, "dummy")


async def open_session(client: PipeClient, cwd: Path, terminal_output: bool = False) -> str:
    params: dict[str, Any] = json.loads(json.dumps(INITIALIZE))
    if terminal_output:
        params["clientCapabilities"]["_meta"] = {"terminal_output": True}
    await client.request("initialize", params)
    result = await client.request("session/new", {"cwd": str(cwd), "mcpServers": []})
    session_id: str = result["sessionId"]
    return session_id


def prompt(session_id: str, text: str) -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}


@pytest.mark.parametrize("model", ["wire", "deepseek"])
async def test_runs_a_real_turn_and_the_agent_writes_the_requested_file_verified_on_disk(
    model: str, tmp_path: Path, wire: WireServer
) -> None:
    """acp-agent e2e: real prompt over ACP — runs a real turn and the agent writes the requested file (verified on disk)"""
    env = model_env(model, tmp_path, wire)
    wire.add(bash_call("call_proof", "printf ACP_OK > proof.txt", "Write the proof file"), text_reply("DONE"))
    cwd = workspace(tmp_path)
    async with spawn_agent(cwd, env) as client:
        session_id = await open_session(client, cwd)
        result = await client.request(
            "session/prompt",
            prompt(
                session_id,
                "Use bash to create a file named proof.txt in the current directory containing exactly "
                "ACP_OK (no newline). Then reply with the single word DONE.",
            ),
        )
        assert await shut_down(client) == 0
    assert result["stopReason"] in ("end_turn", "max_tokens")
    assert (cwd / "proof.txt").read_text(encoding="utf-8").strip() == "ACP_OK"
    calls = [update for update in client.updates if update["sessionUpdate"] == "tool_call"]
    assert any(
        call["kind"] == "execute" and call["title"] != "bash" and isinstance(call["rawInput"].get("command"), str)
        for call in calls
    )
    assert all("_meta" not in update for update in client.updates)


@pytest.mark.parametrize("model", ["wire", "deepseek"])
async def test_with_the_terminal_output_capability_a_real_bash_call_renders_as_a_terminal_card(
    model: str, tmp_path: Path, wire: WireServer
) -> None:
    """acp-agent e2e: real prompt over ACP — with the terminal_output capability, a real bash call renders as a terminal card (content + _meta + exit)"""
    env = model_env(model, tmp_path, wire)
    wire.add(bash_call("call_hi", "echo hi", "Print a greeting"), text_reply("DONE"))
    cwd = workspace(tmp_path)
    async with spawn_agent(cwd, env) as client:
        session_id = await open_session(client, cwd, terminal_output=True)
        await client.request(
            "session/prompt", prompt(session_id, "Run the shell command `echo hi` with bash, then reply DONE.")
        )
        assert await shut_down(client) == 0
    call = next(update for update in client.updates if update["sessionUpdate"] == "tool_call")
    call_id = call["toolCallId"]
    assert {"type": "terminal", "terminalId": call_id} in call["content"]
    assert call["_meta"]["terminal_info"] == {"terminal_id": call_id, "cwd": str(cwd)}
    done = next(
        update
        for update in client.updates
        if update["sessionUpdate"] == "tool_call_update" and update["toolCallId"] == call_id
    )
    assert "content" not in done
    assert done["_meta"]["terminal_output"]["terminal_id"] == call_id
    assert "hi" in done["_meta"]["terminal_output"]["data"]
    assert done["_meta"]["terminal_exit"] == {"terminal_id": call_id, "exit_code": 0}


async def test_a_text_turn_streams_over_the_live_adapter(tmp_path: Path, wire: WireServer) -> None:
    """(port) a text turn over the live adapter streams agent_message_chunks and settles end_turn"""
    wire.add(Reply([TextDelta("hel"), TextDelta("lo"), WireFinish("stop")]))
    cwd = workspace(tmp_path)
    async with spawn_agent(cwd, live_env(tmp_path, wire.base_url, "dummy")) as client:
        session_id = await open_session(client, cwd)
        result = await client.request("session/prompt", prompt(session_id, "say hello"))
        assert await shut_down(client) == 0
    assert result == {"stopReason": "end_turn"}
    texts = [u["content"]["text"] for u in client.updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(texts) == "hello"


def test_the_real_model_variant_reaches_the_public_api_with_the_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """(port) the key-gated variant runs with the real key and no inherited base URL override"""
    import tests.examples.acp.test_acp_e2e as module

    monkeypatch.setenv("DEEPSEEK_BASE_URL", "http://127.0.0.1:9/stale")
    monkeypatch.setattr(module, "REAL_KEY", "sk-test")
    env = module.model_env("deepseek", tmp_path, WireServer())
    assert env["DEEPSEEK_API_KEY"] == "sk-test"
    assert "DEEPSEEK_BASE_URL" not in env
    monkeypatch.setattr(module, "REAL_KEY", None)
    with pytest.raises(pytest.skip.Exception, match="needs DEEPSEEK_API_KEY"):
        module.model_env("deepseek", tmp_path, WireServer())
