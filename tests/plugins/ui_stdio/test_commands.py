"""Slash commands in the chat: a typed ``/name`` runs the command, ``/help`` lists them, others reach the model."""

from __future__ import annotations

import asyncio
from typing import Any

from dsh.core.commands import COMMANDS, Command, CommandRegistry
from dsh.core.session import UserMessageEvent
from dsh.plugins.ui_stdio import StdioRuntime, create_stdio_chat
from dsh.plugins.ui_stdio.commands import help_text
from dsh.plugins.ui_stdio.render import PROMPT
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response
from tests.plugins.ui_stdio.helpers import new_chat, start_chat


async def test_a_command_line_runs_the_command_in_order_and_the_chat_waits_for_it() -> None:
    release = asyncio.Event()
    seen: list[tuple[Any, str]] = []

    async def slow(agent: Any, args: str) -> str | None:
        seen.append((agent, args))
        await release.wait()
        return f"slow {args}"

    async def quiet(agent: Any, args: str) -> str | None:
        seen.append((agent, args))
        return None

    async with Harness([text_response("from the model")]) as h:
        await h.ctx.plugin(CommandRegistry)
        h.ctx[COMMANDS].register(Command(name="slow", description="waits", handler=slow, hint="what"))
        h.ctx[COMMANDS].register(Command(name="quiet", description="says nothing", handler=quiet))
        agent = h.agent("main")
        chat = start_chat(h.ctx, {"oneTurnPerLine": True})
        chat.keyboard.type("/slow first", "/quiet", "/help")
        await chat.keyboard.drained()
        chat.keyboard.close()
        await chat.keyboard.ended.wait()
        assert chat.timer.scheduled == []  # a command is still running: no exit yet
        release.set()
        await chat.timer.armed.wait()
        assert seen == [(agent, "first"), (agent, "")]  # in input order, the second after the first
        assert "slow first\n" + PROMPT in chat.output
        assert "/slow <what>  waits" in chat.output
        assert not [e for e in agent.session.events if type(e) is UserMessageEvent]
        await chat.dispose()


async def test_a_failing_command_says_so_and_unknown_commands_go_to_the_model() -> None:
    async def broken(agent: Any, args: str) -> str | None:
        raise RuntimeError("no luck")

    async with Harness([text_response("model answer")]) as h:
        await h.ctx.plugin(CommandRegistry)
        h.ctx[COMMANDS].register(Command(name="broken", description="fails", handler=broken))
        agent = h.agent("main")
        chat = start_chat(h.ctx)
        chat.keyboard.type("/broken now", "/tmp is full")
        await chat.keyboard.drained()
        await agent.when_idle()
        await asyncio.sleep(0)
        assert "/broken failed: no luck\n" in chat.output
        assert "model answer" in chat.output
        await chat.dispose()


async def test_without_the_commands_service_a_slash_line_is_an_ordinary_message() -> None:
    async with Harness([text_response("plain")]) as h:
        agent = h.agent("main")
        chat = start_chat(h.ctx)
        chat.keyboard.type("/help")
        await chat.keyboard.drained()
        await agent.when_idle()
        assert [e for e in agent.session.events if type(e) is UserMessageEvent]
        await chat.dispose()


def test_help_lists_help_first_then_the_commands_aligned() -> None:
    async def handler(agent: Any, args: str) -> str | None:
        return None

    listed = help_text((Command(name="compact", description="shrink the history", handler=handler),))
    assert listed == "/help     list the commands\n/compact  shrink the history"


async def test_with_a_notice_sink_replies_go_there_and_an_empty_reply_shows_nothing() -> None:
    async def quiet(agent: Any, args: str) -> str | None:
        return None

    async def loud(agent: Any, args: str) -> str | None:
        return "LOUD"

    async with Harness() as h:
        await h.ctx.plugin(CommandRegistry)
        h.ctx[COMMANDS].register(Command(name="quiet", description="says nothing", handler=quiet))
        h.ctx[COMMANDS].register(Command(name="loud", description="says it", handler=loud))
        chat = new_chat()
        notices: list[str] = []
        runtime = StdioRuntime(
            input=chat.keyboard, output=chat.terminal, exit=chat.exits.append, timer=chat.timer, notice=notices.append
        )
        chat.effect = create_stdio_chat(h.ctx, {}, runtime)
        before = chat.output
        chat.keyboard.type("/quiet", "/loud", "/help")
        await chat.keyboard.drained()
        for _ in range(10):
            await asyncio.sleep(0)
        assert notices[0] == "LOUD"
        assert notices[1].startswith("/help")
        assert len(notices) == 2
        assert chat.output == before
        await chat.dispose()
