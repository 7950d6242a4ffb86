"""SPEC §15 ``createStdioChat disposal (HMR safety)``: a disposed chat never exits and reads nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable

import pytest

from dsh.core.agent import AGENT_QUEUED, AGENT_STATUS, AGENT_STREAM_CHUNK, AGENT_TURN_END, AGENT_TURN_START, Agent
from dsh.core.session import SESSION_EVENT
from dsh.kernel import Context, Fiber, PluginSpec
from dsh.plugins.ui_stdio import create_stdio_chat
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response
from tests.plugins.ui_stdio.helpers import Chat, QueuedLog, new_chat

RENDER_EVENTS = (AGENT_STREAM_CHUNK, AGENT_TURN_START, AGENT_TURN_END, SESSION_EVENT, AGENT_STATUS)


async def chat_plugin(ctx: Context, chat: Chat, config: dict[str, str] | None = None) -> Fiber:
    """Load a plugin whose apply starts ``chat`` (the way ``apply`` does, with fakes)."""

    def apply(plugin_ctx: Context, _config: object) -> None:
        chat.effect = create_stdio_chat(plugin_ctx, config or {}, chat.runtime)

    return await ctx.plugin(PluginSpec(name="ui-stdio-test", apply=apply, inject=["agents"]))


def listener_counts(ctx: Context) -> list[int]:
    return [ctx.listener_count(event) for event in RENDER_EVENTS]


async def test_never_exits_the_process_when_eof_arrives_after_fiber_dispose() -> None:
    """never exits the process when EOF arrives after fiber dispose"""
    async with Harness() as h:
        h.agent("main")
        chat = new_chat()
        fiber = await chat_plugin(h.ctx, chat)
        await fiber.dispose()
        chat.keyboard.close()
        await h.ctx.dispose()
        assert chat.timer.scheduled == []
        assert chat.exits == []
        assert not chat.keyboard.ended.is_set()  # the reader was stopped before the EOF


async def test_cancels_a_scheduled_exit_if_disposed_within_the_flush_window() -> None:
    """cancels a scheduled exit if disposed within the flush window"""
    async with Harness() as h:
        chat = new_chat()
        fiber = await chat_plugin(h.ctx, chat)
        chat.keyboard.close()
        await chat.timer.armed.wait()
        (handle,) = chat.timer.scheduled
        await fiber.dispose()
        assert handle.cancelled
        chat.timer.fire()  # the delay passes
        assert chat.exits == []


async def test_stops_handling_input_after_dispose() -> None:
    """stops handling input after dispose"""
    async with Harness() as h:
        h.agent("main")
        queued = QueuedLog(h.ctx)
        chat = new_chat()
        fiber = await chat_plugin(h.ctx, chat)
        await fiber.dispose()
        chat.keyboard.type("too late")
        chat.keyboard.close()
        await h.ctx.dispose()
        assert queued.entries == []
        assert chat.output == "ready.\n> "


async def test_stops_handling_input_when_disposed_by_the_line_it_is_handling() -> None:
    """Disposed from inside the handling of a line, lines already readable are dropped too."""

    async def lines() -> AsyncIterator[str]:
        yield "first"
        yield "second"  # readable without waiting: the reader takes it before it sees its cancellation

    async with Harness([text_response("ok")]) as h:
        agent = h.agent("main")
        queued = QueuedLog(h.ctx)
        chat = new_chat()
        stopped: asyncio.Future[Awaitable[None] | None] = asyncio.get_running_loop().create_future()

        def dispose_chat(_agent: Agent, _content: object, _info: object) -> None:
            assert chat.effect is not None
            stopped.set_result(chat.effect())

        h.ctx.on(AGENT_QUEUED, dispose_chat)
        runtime = chat.runtime
        chat.effect = create_stdio_chat(h.ctx, {}, type(runtime)(lines(), runtime.output, runtime.exit, runtime.timer))
        stopping = await stopped
        assert stopping is not None
        await stopping  # the reader has ended
        await agent.when_idle()
        assert queued.entries == [("main", "first", False)]
        assert chat.timer.scheduled == []
        assert chat.exits == []


async def test_removes_the_agent_status_listener_on_dispose() -> None:
    """removes the agent/status listener on dispose"""
    async with Harness() as h:
        before = h.ctx.listener_count(AGENT_STATUS)
        chat = new_chat()
        fiber = await chat_plugin(h.ctx, chat)
        assert h.ctx.listener_count(AGENT_STATUS) == before + 1
        await fiber.dispose()
        assert h.ctx.listener_count(AGENT_STATUS) == before


async def test_unloading_the_plugin_leaves_no_listener_or_task_behind() -> None:
    """Unload: every listener and the input task go with the fiber."""
    async with Harness() as h:
        before = listener_counts(h.ctx)
        chat = new_chat()
        fiber = await chat_plugin(h.ctx, chat)
        assert listener_counts(h.ctx) == [count + 1 for count in before]
        assert fiber.task_count == 1
        await fiber.dispose()
        assert listener_counts(h.ctx) == before
        assert fiber.task_count == 0
        assert fiber.effect_count == 0


async def test_the_chat_effect_alone_stops_the_chat_and_is_idempotent() -> None:
    """Calling the returned disposer (not the fiber) undoes everything; a second call does nothing."""
    async with Harness() as h:
        before = listener_counts(h.ctx)
        chat = new_chat()
        chat.effect = create_stdio_chat(h.ctx, {}, chat.runtime)
        await chat.dispose()
        assert listener_counts(h.ctx) == before
        assert chat.effect() is None
        chat.keyboard.close()
        assert chat.timer.scheduled == []


class BrokenTerminal:
    def __init__(self) -> None:
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        raise OSError("terminal gone")

    def flush(self) -> None:
        raise AssertionError("never reached")


async def test_a_failing_welcome_rolls_back_and_leaves_the_name_reusable() -> None:
    """Rollback: when the welcome cannot be written, nothing registered stays and a new chat can start."""
    async with Harness() as h:
        before = listener_counts(h.ctx)
        tasks_before = h.ctx.fiber.task_count
        chat = new_chat()
        runtime = chat.runtime
        broken = type(runtime)(runtime.input, BrokenTerminal(), runtime.exit, runtime.timer)
        with pytest.raises(OSError, match="terminal gone"):
            create_stdio_chat(h.ctx, {}, broken)
        assert listener_counts(h.ctx) == before
        assert h.ctx.fiber.task_count == tasks_before
        again = new_chat()
        fiber = await chat_plugin(h.ctx, again)
        assert again.output == "ready.\n> "
        await fiber.dispose()
