"""The echo-agent's own plugins in-process: the ``mock-echo`` model and the ``echo`` tool (SPEC §16.2)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from dsh.core.agent import AGENT_STREAM_CHUNK, Agent
from dsh.core.llm import Message, StreamChunk, TextDeltaChunk, ToolResultBlock, text
from dsh.kernel import describe, resolve_plugin
from dsh.testing.harness import Harness
from dsh.testing.logs import data_json
from tests.examples.echo.helpers import EXAMPLE


def example_plugin(path: str) -> ModuleType:
    """The example's plugin module, loaded the way the loader loads it from ``tree.yml``."""
    module = resolve_plugin(path, EXAMPLE)
    assert isinstance(module, ModuleType)
    return module


mock_llm = example_plugin("./plugins/mock_llm.py")
echo_tool = example_plugin("./plugins/echo_tool.py")


def user(*texts: str) -> Message:
    return Message(role="user", content=tuple(text(value) for value in texts))


def of_type(agent: Agent, kind: str) -> list[Any]:
    return data_json(agent.session, kind)


def test_both_plugins_are_module_namespaces_with_their_injects() -> None:
    assert (describe(mock_llm).name, describe(mock_llm).inject) == ("mock-llm", ("llm",))
    assert (describe(echo_tool).name, describe(echo_tool).inject) == ("echo-tool", ("tools",))


def test_the_model_reacts_to_the_newest_untagged_user_text() -> None:
    messages: list[Message] = [
        user("older"),
        Message(role="assistant", content=(text("reply"),)),
        user('<steering source="user">', "newest", "second block", "</steering>"),
        Message(role="assistant", content=(text("not a user"),)),
    ]
    assert mock_llm.user_text(messages) == "newest"
    assert mock_llm.user_text([user("<context>"), user("<only tags>")]) == ""
    assert mock_llm.user_text([]) == ""


def test_a_tool_result_counts_only_in_the_last_message() -> None:
    result = Message(role="user", content=(ToolResultBlock(tool_call_id="c", content=()),))
    assert mock_llm.ends_with_tool_result([user("echo x"), result])
    assert not mock_llm.ends_with_tool_result([result, user("echo x")])
    assert not mock_llm.ends_with_tool_result([])


async def test_an_echo_line_round_trips_the_tool_through_the_real_loop() -> None:
    async with Harness() as h:
        await h.ctx.plugin(mock_llm, {"delayMs": 0})
        await h.ctx.plugin(echo_tool)
        agent = h.agent("main", model="mock-echo")
        agent.send([text("echo héllo wörld")])
        await agent.when_idle()
        assert of_type(agent, "tool/call") == [
            {"turn": 1, "step": 1, "callId": "call-echo", "name": "echo", "arguments": '{"text":"héllo wörld"}'}
        ]
        (result,) = of_type(agent, "tool/result")
        assert result["content"] == [{"type": "text", "text": "ECHO: HÉLLO WÖRLD"}]
        assert result["isError"] is False
        replies = [m["content"] for m in of_type(agent, "assistant/message")]
        assert replies[0][0] == {"type": "text", "text": "Let me echo that for you."}
        assert replies[-1] == [{"type": "text", "text": "The echo tool has spoken."}]
        assert [u["usage"] for u in of_type(agent, "usage")] == [
            {"inputTokens": 20, "outputTokens": 10},
            {"inputTokens": 20, "outputTokens": len("The echo tool has spoken.")},
        ]


async def test_other_lines_get_the_canned_reply_one_character_per_chunk() -> None:
    async with Harness() as h:
        await h.ctx.plugin(mock_llm, {})  # the default 2 ms pacing
        agent = h.agent("main", model="mock-echo")
        agent.send([text("just chatting")])
        await agent.when_idle()
        reply = 'You said: "just chatting". Try "echo <something>" to see a tool call.'
        chunks = [data["chunk"] for data in of_type(agent, "assistant/chunk")]
        assert [c["text"] for c in chunks if c["type"] == "text-delta"] == list(reply)
        assert chunks[-1] == {"type": "finish", "reason": {"kind": "stop"}}
        assert of_type(agent, "tool/call") == []


async def test_the_model_stops_streaming_when_the_step_is_aborted() -> None:
    async with Harness() as h:
        await h.ctx.plugin(mock_llm, {"delayMs": 1})
        agent = h.agent("main", model="mock-echo")

        def abort_on_first_text(_agent: Agent, _turn: int, _step: int, chunk: StreamChunk) -> None:
            if type(chunk) is TextDeltaChunk:
                agent.abort("enough")

        h.ctx.on(AGENT_STREAM_CHUNK, abort_on_first_text)
        agent.send([text("talk to me")])
        await agent.when_idle()
        assert [d["reason"] for d in of_type(agent, "turn/end")] == [{"kind": "aborted", "reason": "enough"}]
        deltas = [d for d in of_type(agent, "assistant/chunk") if d["chunk"]["type"] == "text-delta"]
        assert len(deltas) == 1


async def test_unloading_the_plugins_removes_the_model_and_the_tool() -> None:
    async with Harness() as h:
        llm_fiber = await h.ctx.plugin(mock_llm, {})
        tool_fiber = await h.ctx.plugin(echo_tool)
        assert "mock-echo" in h.llm.models()
        assert h.tools.get("echo") is not None
        await llm_fiber.dispose()
        await tool_fiber.dispose()
        assert "mock-echo" not in h.llm.models()
        assert h.tools.get("echo") is None
