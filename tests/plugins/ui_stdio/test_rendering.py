"""SPEC §15 ``createStdioChat rendering``: what the chat prints for every agent's activity."""

from __future__ import annotations

from typing import Any

from msgspec import Raw

from dsh.core.agent import AGENT_STREAM_CHUNK, AGENT_TURN_END, AGENT_TURN_START
from dsh.core.llm import (
    BlockEndChunk,
    BlockStartChunk,
    ContentBlock,
    FinishChunk,
    ReasoningDeltaChunk,
    StopFinish,
    TokenUsage,
    ToolCallDeltaChunk,
    UsageChunk,
    UserSource,
    text,
)
from dsh.core.session import CompletedReason, SteeringMessageData, SteeringMessageEvent
from dsh.core.tools import ToolExecution, define_tool
from dsh.plugins.ui_stdio import DIM, RESET
from dsh.testing.harness import Harness
from dsh.testing.logs import data_json, event_types
from dsh.testing.scripted import text_response
from tests.plugins.ui_stdio.helpers import start_chat
from tests.plugins.ui_stdio.scripts import finished, reasoning_block, text_block, tool_call_block

BANNER = "ready.\n> "


def register_bash(h: Harness, output: str) -> None:
    async def run(_args: Any, _execution: ToolExecution) -> tuple[ContentBlock, ...]:
        return (text(output),)

    h.tools.register(define_tool("bash", "Run a command.", {"command": {"type": "string", "required": True}}, run))


async def test_writes_the_welcome_banner_and_prompt_on_start() -> None:
    """writes the welcome banner and prompt on start"""
    async with Harness() as h:
        chat = start_chat(h.ctx, {"welcome": "hi there"})
        assert chat.output == "hi there\n> "
        assert chat.terminal.flushes >= 1


async def test_falls_back_to_default_welcome_agent_when_called_with_empty_config() -> None:
    """falls back to default welcome/agent when called with empty config"""
    async with Harness([text_response("ok")]) as h:
        agent = h.agent("main")
        chat = start_chat(h.ctx, {})
        assert chat.output == "ready.\n> "
        chat.keyboard.type("hello")
        await chat.keyboard.drained()
        await agent.when_idle()
        user_messages = [data["content"] for data in data_json(agent.session, "user/message")]
        assert user_messages == [[{"type": "text", "text": "hello"}]]
        none_chat = start_chat(h.ctx, None)
        assert none_chat.output == "ready.\n> "


async def test_renders_text_delta_chunks_verbatim() -> None:
    """renders text-delta chunks verbatim"""
    async with Harness([finished(text_block(0, "Hello, ", "wor", "ld  \n!"))]) as h:
        agent = h.agent("main")
        chat = start_chat(h.ctx)
        agent.send([text("hi")])
        await agent.when_idle()
        assert chat.output == BANNER + "\n[main turn 1] Hello, world  \n!\n> "


async def test_wraps_reasoning_delta_in_the_dim_sgr_and_resets_on_the_following_text_delta() -> None:
    """wraps reasoning-delta in the dim SGR and resets on the following text-delta"""
    async with Harness([finished([*reasoning_block(0, "think", "more"), *text_block(1, "answer")])]) as h:
        agent = h.agent("main")
        chat = start_chat(h.ctx)
        agent.send([text("hi")])
        await agent.when_idle()
        assert "\x1b[2mthinkmore\x1b[0m\nanswer" in chat.output
        assert chat.output == BANNER + "\n[main turn 1] \x1b[2mthinkmore\x1b[0m\nanswer\n> "


async def test_ignores_stream_chunk_types_it_does_not_render() -> None:
    """ignores stream-chunk types it does not render"""
    async with Harness() as h:
        agent = h.agent("main")
        chat = start_chat(h.ctx)
        chunks: list[Any] = [
            BlockStartChunk(index=0, block_type="text"),
            ToolCallDeltaChunk(index=0, id="c1", name="x", arguments_delta="{}"),
            BlockEndChunk(index=0, block=text("not again")),
            UsageChunk(usage=TokenUsage(input_tokens=1, output_tokens=2)),
            FinishChunk(reason=StopFinish()),
            Raw(b'{"type":"future-chunk","text":"unknown"}'),  # no chunk type this version knows
        ]
        for chunk in chunks:
            h.ctx.emit(AGENT_STREAM_CHUNK, agent, 1, 1, chunk)
        assert chat.output == BANNER


async def test_renders_turn_start_and_turn_end_markers() -> None:
    """renders turn-start and turn-end markers"""
    async with Harness() as h:
        agent = h.agent("main")
        chat = start_chat(h.ctx)
        h.ctx.emit(AGENT_TURN_START, agent, 3)
        assert chat.output == BANNER + "\n[main turn 3] "
        h.ctx.emit(AGENT_TURN_END, agent, 3, CompletedReason())
        assert chat.output == BANNER + "\n[main turn 3] \n> "


async def test_renders_turn_markers_of_every_agent_not_only_the_input_target() -> None:
    """Rendering is global: another agent's turn is shown with its own id."""
    async with Harness([text_response("side")]) as h:
        helper = h.agent("helper")
        chat = start_chat(h.ctx, {"agent": "main"})
        helper.send([text("go")])
        await helper.when_idle()
        assert chat.output == BANNER + "\n[helper turn 1] side\n> "


async def test_resets_dim_styling_at_turn_end_if_a_turn_ends_mid_reasoning() -> None:
    """resets dim styling at turn-end if a turn ends mid-reasoning"""
    async with Harness([finished(reasoning_block(0, "hmm"))]) as h:
        agent = h.agent("main")
        chat = start_chat(h.ctx)
        agent.send([text("hi")])
        await agent.when_idle()
        assert chat.output == BANNER + f"\n[main turn 1] {DIM}hmm{RESET}\n> "


async def test_renders_tool_call_and_tool_result_session_events() -> None:
    """renders tool/call and tool/result session events"""
    script = [
        finished(tool_call_block(0, "c1", "bash", {"command": "ls"}), "tool-calls"),
        finished(text_block(0, "done")),
    ]
    async with Harness(script) as h:
        register_bash(h, "file.txt")
        agent = h.agent("main")
        chat = start_chat(h.ctx)
        agent.send([text("list")])
        await agent.when_idle()
        assert '[tool call] bash({"command":"ls"})' in chat.output
        assert "[tool result] file.txt" in chat.output
        assert chat.output == (
            BANNER + '\n[main turn 1] \n  [tool call] bash({"command":"ls"})\n  [tool result] file.txt\n  done\n> '
        )


async def test_resets_dim_styling_when_a_tool_call_interrupts_reasoning() -> None:
    """resets dim styling when a tool/call interrupts reasoning"""
    script = [
        finished([*reasoning_block(0, "plan"), *tool_call_block(1, "c1", "bash", {"command": "ls"})], "tool-calls"),
        finished(text_block(0, "done")),
    ]
    async with Harness(script) as h:
        register_bash(h, "a\nb")
        agent = h.agent("main")
        chat = start_chat(h.ctx)
        agent.send([text("list")])
        await agent.when_idle()
        assert chat.output == (
            BANNER
            + f'\n[main turn 1] {DIM}plan{RESET}\n  [tool call] bash({{"command":"ls"}})'
            + "\n  [tool result] a\nb\n  done\n> "
        )


async def test_ignores_session_events_it_does_not_render() -> None:
    """ignores session events it does not render"""
    async with Harness() as h:
        agent = h.agent("main")
        chat = start_chat(h.ctx)
        agent.inject([text("background note")])
        await agent.when_idle()
        assert event_types(agent.session) == ["turn/start", "context/message", "turn/end"]
        assert chat.output == BANNER


async def test_a_steering_line_is_written_on_a_line_of_its_own_after_ending_a_reasoning_run() -> None:
    from dsh.plugins.ui_stdio import Renderer

    written: list[str] = []
    renderer = Renderer(written.append)
    renderer.chunk(ReasoningDeltaChunk(index=0, text="hmm"))
    steering = SteeringMessageData(turn=1, content=(text("faster"),), source=UserSource())
    renderer.session_event(SteeringMessageEvent(seq=0, time=0, data=steering))
    assert "".join(written) == f"{DIM}hmm{RESET}\n  [steering] faster\n"
