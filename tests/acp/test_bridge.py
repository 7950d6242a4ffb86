"""SPEC §14.8 — ``packages/acp/tests/bridge.spec.ts`` (describe ``acp bridge``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.core.llm import text
from dsh.core.session import UserMessageEvent
from dsh.testing.scripted import text_response
from tests.acp.client import RpcResponseError, message_text
from tests.acp.helpers import CWD, bridge_stack

INITIALIZE_RESULT = {
    "protocolVersion": 1,
    "agentInfo": {"name": "deepseek-harness-acp", "version": "0.0.1"},
    "agentCapabilities": {
        "loadSession": True,
        "promptCapabilities": {"image": False, "audio": False, "embeddedContext": False},
        "sessionCapabilities": {"list": {}, "fork": {}},
    },
    "authMethods": [],
    "_meta": {"steering": {"supported": True}},
}


async def test_initialize_negotiates_the_protocol_version_and_advertises_capabilities(tmp_path: Path) -> None:
    """initialize negotiates the protocol version and advertises capabilities"""
    async with bridge_stack(tmp_path) as stack:
        result = await stack.client.initialize()
        assert result["protocolVersion"] == 1
        assert result["agentCapabilities"]["loadSession"] is True
        assert result["agentCapabilities"]["promptCapabilities"]["image"] is False
        assert result["agentCapabilities"]["promptCapabilities"]["audio"] is False
        assert result["agentInfo"]["name"] == "deepseek-harness-acp"
        assert result == INITIALIZE_RESULT
        # the whole frame, as a JSON value (key order is the schema's)
        assert json.loads(stack.client.raw_lines[0]) == json.loads(
            '{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentInfo":{"name":"deepseek-harness-acp",'
            '"version":"0.0.1"},"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":false,'
            '"audio":false,"embeddedContext":false},"sessionCapabilities":{"list":{},"fork":{}}},"authMethods":[],'
            '"_meta":{"steering":{"supported":true}}}}'
        )


async def test_session_new_creates_a_session_and_a_full_prompt_turn_streams_text_then_settles_end_turn(
    tmp_path: Path,
) -> None:
    """session/new creates a session and a full prompt turn streams text then settles end_turn"""
    async with bridge_stack(tmp_path, [text_response("hello there")]) as stack:
        session_id = await stack.session()
        assert json.loads(stack.client.raw_lines[1]) == json.loads(
            f'{{"jsonrpc":"2.0","id":2,"result":{{"sessionId":"{session_id}","configOptions":[{{"id":"model",'
            '"name":"Model","description":"The model this session\'s requests use","category":"model",'
            '"type":"select","currentValue":"mock","options":[{"value":"mock","name":"mock"}]}]}}'
        )
        result = await stack.client.prompt(session_id, "hi")
        assert result == {"stopReason": "end_turn"}
        assert message_text(stack.updates) == "hello there"
        assert all(sid == session_id for sid, _ in stack.client.session_updates)
        # live turns do not echo the prompt back as user_message_chunk
        assert not [u for u in stack.updates if u["sessionUpdate"] == "user_message_chunk"]
        # every update precedes the prompt's response frame
        assert stack.client.frames[-1] == {"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}}
        agent = stack.agent(session_id)
        assert agent.session.id == session_id


async def test_allows_multiple_concurrent_sessions_each_with_a_distinct_id(tmp_path: Path) -> None:
    """allows multiple concurrent sessions, each with a distinct id"""
    async with bridge_stack(tmp_path) as stack:
        await stack.client.initialize()
        futures = [stack.client.send("session/new", {"cwd": CWD, "mcpServers": []}) for _ in range(3)]
        ids = [(await future)["result"]["sessionId"] for future in futures]
        assert len(set(ids)) == 3
        assert sorted(stack.bridge.session_ids) == sorted(ids)
        for session_id in ids:
            assert stack.agent(session_id).session.header.cwd == CWD


async def test_rejects_a_non_absolute_cwd_but_accepts_any_absolute_cwd_per_session_workspace(tmp_path: Path) -> None:
    """rejects a non-absolute cwd but accepts any absolute cwd (per-session workspace)"""
    async with bridge_stack(tmp_path) as stack:
        await stack.client.initialize()
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.new_session("relative/dir")
        assert caught.value.error == {
            "code": -32602,
            "message": "Invalid params: cwd must be an absolute path: relative/dir",
        }
        session_id = await stack.client.new_session("/tmp")
        assert stack.agent(session_id).session.header.cwd == "/tmp"
        assert len(stack.agents.list()) == 1


async def test_rejects_non_empty_additional_directories(tmp_path: Path) -> None:
    """rejects non-empty additionalDirectories"""
    async with bridge_stack(tmp_path) as stack:
        await stack.client.initialize()
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.new_session(CWD, additionalDirectories=["/extra-dir"])
        assert caught.value.error == {
            "code": -32602,
            "message": "Invalid params: additionalDirectories is not supported in this MVP",
        }
        assert stack.client.raw_lines[-1] == (
            '{"jsonrpc":"2.0","id":2,"error":{"code":-32602,'
            '"message":"Invalid params: additionalDirectories is not supported in this MVP"}}'
        )
        assert stack.agents.list() == []


async def test_rejects_an_empty_prompt_without_hanging(tmp_path: Path) -> None:
    """rejects an empty prompt without hanging"""
    async with bridge_stack(tmp_path) as stack:
        session_id = await stack.session()
        for blocks in ([{"type": "text", "text": "   \n\t"}], []):
            with pytest.raises(RpcResponseError) as caught:
                await stack.client.request("session/prompt", {"sessionId": session_id, "prompt": blocks})
            assert caught.value.error == {"code": -32602, "message": "Invalid params: empty prompt"}
        assert stack.bridge.session_ids == [session_id]
        assert stack.agent(session_id).session.events == []


async def test_rejects_image_content_in_a_prompt_text_only_capabilities(tmp_path: Path) -> None:
    """rejects image content in a prompt (text-only capabilities)"""
    async with bridge_stack(tmp_path) as stack:
        session_id = await stack.session()
        prompt = [{"type": "text", "text": "look"}, {"type": "image", "data": "AA==", "mimeType": "image/png"}]
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.request("session/prompt", {"sessionId": session_id, "prompt": prompt})
        assert caught.value.code == -32602
        assert caught.value.message == (
            "Invalid params: only text and resource_link prompt content is supported; "
            "image/audio/embedded resource blocks are rejected rather than silently dropped"
        )
        assert not caught.value.has_data
        assert stack.agent(session_id).session.events == []


async def test_accepts_a_resource_link_prompt_by_rendering_the_link_into_the_text_sent_to_the_agent(
    tmp_path: Path,
) -> None:
    """accepts a resource_link prompt by rendering the link into the text sent to the agent"""
    async with bridge_stack(tmp_path, [text_response("ok")]) as stack:
        session_id = await stack.session()
        prompt = [
            {"type": "text", "text": "see "},
            {"type": "resource_link", "name": "notes.md", "uri": "file:///tmp/notes.md"},
        ]
        result = await stack.client.request("session/prompt", {"sessionId": session_id, "prompt": prompt})
        assert result == {"stopReason": "end_turn"}
        expected = 'see \n[resource_link name="notes.md" uri="file:///tmp/notes.md"]\n'
        [user] = [e.data for e in stack.agent(session_id).session.events if type(e) is UserMessageEvent]
        assert user.content == (text(expected),)
        assert stack.harness.model.requests[0].messages[-1].content == (text(expected),)


async def test_rejects_a_prompt_for_an_unknown_session(tmp_path: Path) -> None:
    """rejects a prompt for an unknown session"""
    async with bridge_stack(tmp_path) as stack:
        await stack.client.initialize()
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.prompt("no-such-session", "hi")
        assert caught.value.error == {"code": -32602, "message": "Invalid params: unknown session: no-such-session"}


async def test_negotiates_an_unsupported_protocol_version_down_to_the_supported_one(tmp_path: Path) -> None:
    """negotiates an unsupported protocol version down to the supported one"""
    async with bridge_stack(tmp_path) as stack:
        assert (await stack.client.initialize(version=999))["protocolVersion"] == 1
        assert (await stack.client.initialize(version=0))["protocolVersion"] == 1


async def test_a_cancel_for_an_unknown_absent_session_is_a_silent_no_op(tmp_path: Path) -> None:
    """a cancel for an unknown/absent session is a silent no-op"""
    async with bridge_stack(tmp_path) as stack:
        await stack.client.initialize()
        stack.client.cancel("nope")
        # the connection keeps serving and nothing was written for the notification
        assert (await stack.client.initialize())["protocolVersion"] == 1
        assert [frame["id"] for frame in stack.client.frames] == [1, 2]


async def test_authenticate_is_a_no_op_no_auth_methods_advertised(tmp_path: Path) -> None:
    """authenticate is a no-op (no auth methods advertised)"""
    async with bridge_stack(tmp_path) as stack:
        assert (await stack.client.initialize())["authMethods"] == []
        assert await stack.client.request("authenticate", {"methodId": "anything"}) == {}
        assert stack.client.raw_lines[-1] == '{"jsonrpc":"2.0","id":2,"result":{}}'


async def test_honors_agent_name_agent_version_system_prompt_config(tmp_path: Path) -> None:
    """honors agentName/agentVersion/systemPrompt config"""
    config = {"agentName": "my-agent", "agentVersion": "9.9.9", "systemPrompt": "be terse"}
    async with bridge_stack(tmp_path, [text_response("ok")], config=config) as stack:
        result = await stack.client.initialize()
        assert result["agentInfo"] == {"name": "my-agent", "version": "9.9.9"}
        session_id = await stack.client.new_session(CWD)
        assert stack.agent(session_id).options.system_prompt == "be terse"
        await stack.client.prompt(session_id, "hi")
        system = stack.harness.model.requests[0].system
        assert system is not None
        assert "be terse" in system
