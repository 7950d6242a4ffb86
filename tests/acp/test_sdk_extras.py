"""(issue acceptance) The official ACP SDK client over real pipes: fs passthrough, list, model selection,
commands, usage, fork and steering against ``dsh acp`` with a scripted model on the wire test server."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest
from acp.schema import ClientCapabilities, FileSystemCapabilities

import acp
from dsh.testing.wire import Finish, Reply, Usage, WireServer, text_reply, tool_call
from tests.acp.sdk import Recorder, spawn

USAGE = Usage(prompt_tokens=100, completion_tokens=20)


def call(call_id: str, name: str, arguments: dict[str, object]) -> Reply:
    return Reply([*tool_call(0, call_id, name, json.dumps(arguments)), Finish("tool_calls", USAGE)])


def capabilities(*, steering: bool = False) -> ClientCapabilities:
    meta = {"steering": {"sessionPrompt": True}} if steering else None
    return ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), field_meta=meta)


async def test_file_tools_read_the_editor_buffer_and_apply_the_edit_in_the_editor(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    app = workspace / "app.py"
    app.write_text("print('saved on disk')\n")
    script = [
        call("call_read", "read", {"file_path": "app.py"}),
        call("call_edit", "edit", {"file_path": "app.py", "old_string": "unsaved", "new_string": "edited"}),
        text_reply("done", usage=USAGE),
    ]
    recorder = Recorder({str(app): "print('unsaved buffer')\n"})
    async with WireServer(script) as wire, spawn(recorder, tmp_path, wire.base_url) as (conn, _proc):
        hello = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=capabilities())
        assert hello.agent_capabilities is not None
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        done = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("fix it")])
        assert done.stop_reason == "end_turn"
    # the agent read the buffer (not the disk) and the edit went to the editor
    assert [kind for kind, _path, _content in recorder.calls][:2] == ["read", "read"]
    assert ("write", str(app), "print('edited buffer')\n") in recorder.calls
    assert app.read_text() == "print('saved on disk')\n"
    assert "unsaved buffer" in json.dumps(wire.requests[1].json["messages"])
    edit_result = [c for c in recorder.cards(session.session_id) if c.get("toolCallId") == "call_edit"][-1]
    assert edit_result["status"] == "completed"
    assert edit_result["content"] == [
        {
            "type": "diff",
            "path": str(app),
            "oldText": "print('unsaved buffer')\n",
            "newText": "print('edited buffer')\n",
        }
    ]
    usage = recorder.of("usage_update")
    assert len(usage) == 3
    assert usage[-1]["used"] == 120
    assert usage[-1]["size"] == 256_000
    assert usage[-1]["cost"]["currency"] == "USD"
    assert usage[-1]["cost"]["amount"] > 0


async def test_list_models_commands_fork_and_steering_from_the_sdk_client(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    script = [
        text_reply("first answer", usage=USAGE),
        call("call_sleep", "bash", {"command": "sleep 1; echo slept", "description": "wait"}),
        text_reply("steered answer", usage=USAGE),
    ]
    recorder = Recorder()
    async with WireServer(script) as wire, spawn(recorder, tmp_path, wire.base_url) as (conn, _proc):
        hello = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=capabilities())
        assert hello.agent_capabilities is not None
        sessions = hello.agent_capabilities.session_capabilities
        assert sessions is not None
        assert sessions.list is not None
        assert sessions.fork is not None
        assert hello.field_meta == {"steering": {"supported": True}}
        session = await conn.new_session(cwd=str(tmp_path), mcp_servers=[])
        sid = session.session_id
        assert session.config_options is not None
        (option,) = session.config_options
        selector = option.root if hasattr(option, "root") else option
        assert selector.id == "model"
        assert selector.category == "model"
        assert selector.current_value == "deepseek-v4-flash"
        assert {choice.value for choice in selector.options} >= {"deepseek-v4-flash", "deepseek-v4-pro"}
        # commands: advertised, and run without a model request
        for _ in range(100):
            if recorder.of("available_commands_update", sid):
                break
            await asyncio.sleep(0.02)
        (advertised,) = recorder.of("available_commands_update", sid)
        assert advertised["availableCommands"] == [
            {"name": "whoami", "description": "name the session", "input": {"hint": "words"}}
        ]
        ran = await conn.prompt(session_id=sid, prompt=[acp.text_block("/whoami hello")])
        assert ran.stop_reason == "end_turn"
        assert recorder.of("agent_message_chunk", sid)[-1]["content"]["text"] == f"session {sid} says hello"
        assert wire.requests == []
        # model selection, then a turn on the chosen model
        answer = await conn.set_config_option(config_id="model", session_id=sid, value="deepseek-v4-pro")
        assert answer is not None
        first = await conn.prompt(session_id=sid, prompt=[acp.text_block("hi")])
        assert first.stop_reason == "end_turn"
        assert wire.requests[0].json["model"] == "deepseek-v4-pro"
        with pytest.raises(acp.RequestError) as caught:
            await conn.set_config_option(config_id="model", session_id=sid, value="gpt-9")
        assert "choose one of the available models" in str(caught.value.data or caught.value)
        # list and fork
        listed = await conn.list_sessions(cwd=str(tmp_path))
        assert [row.session_id for row in listed.sessions] == [sid]
        forked = await conn.fork_session(cwd=str(tmp_path), session_id=sid)
        assert forked.session_id != sid
        # steering: a running turn takes the extension's text between its steps
        running = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[acp.text_block("wait a bit")]))
        for _ in range(250):
            if any(c.get("toolCallId") == "call_sleep" for c in recorder.cards(sid)):
                break
            await asyncio.sleep(0.02)
        steered = await conn.ext_method(
            "session/steering", {"sessionId": sid, "prompt": [acp.text_block("also say hi").model_dump()]}
        )
        assert steered == {"outcome": "injected"}
        assert (await running).stop_reason == "end_turn"
    assert "also say hi" in json.dumps(wire.requests[-1].json["messages"])
    assert wire.requests[-1].json["model"] == "deepseek-v4-pro"
