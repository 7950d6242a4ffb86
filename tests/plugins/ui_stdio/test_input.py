"""SPEC §15 ``createStdioChat input``: typed lines go to one agent, by its status."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from dsh.core.agent import AGENT_QUEUED, AGENT_STATUS, Agent, AgentStatus
from dsh.core.llm import TextBlock
from dsh.core.session import TurnStartEvent, UserMessageEvent
from dsh.plugins.ui_stdio import create_stdio_chat
from dsh.testing.harness import Harness
from dsh.testing.scripted import HANG, text_response
from tests.plugins.ui_stdio.helpers import QueuedLog, new_chat, start_chat


def user_texts(agent: Agent) -> list[str]:
    return [
        block.text
        for event in agent.session.events
        if type(event) is UserMessageEvent
        for block in event.data.content
        if type(block) is TextBlock
    ]


async def running(h: Harness, agent: Agent) -> None:
    """Return once ``agent`` reports ``running``."""
    seen = asyncio.Event()

    def on_status(subject: Agent, status: AgentStatus) -> None:
        if subject is agent and status == "running":
            seen.set()

    stop = h.ctx.on(AGENT_STATUS, on_status)
    if agent.status != "running":
        await seen.wait()
    stop()


async def test_sends_a_typed_line_to_an_idle_agent() -> None:
    """sends a typed line to an idle agent"""
    async with Harness([text_response("hi")]) as h:
        agent = h.agent("main")
        queued = QueuedLog(h.ctx)
        chat = start_chat(h.ctx)
        chat.keyboard.type("  hello there \r")
        await chat.keyboard.drained()
        assert queued.entries == [("main", "hello there", False)]
        await agent.when_idle()
        assert user_texts(agent) == ["hello there"]


async def test_steers_a_typed_line_into_a_running_agent() -> None:
    """steers a typed line into a running agent"""
    async with Harness([HANG, text_response("ok")]) as h:
        agent = h.agent("main")
        queued = QueuedLog(h.ctx)
        chat = start_chat(h.ctx)
        chat.keyboard.type("first")
        await running(h, agent)
        chat.keyboard.type("more")
        await chat.keyboard.drained()
        assert queued.entries == [("main", "first", False), ("main", "more", True)]
        agent.abort()
        await agent.when_idle()
        # steering that was still pending when the step failed is run as a new turn
        assert user_texts(agent) == ["first", "more"]


async def test_ignores_blank_lines() -> None:
    """ignores blank lines"""
    async with Harness([text_response("ok")]) as h:
        agent = h.agent("main")
        queued = QueuedLog(h.ctx)
        chat = start_chat(h.ctx)
        chat.keyboard.type("", "   ", "\t", "\r", "real")
        await chat.keyboard.drained()
        assert queued.entries == [("main", "real", False)]
        await agent.when_idle()


async def test_logs_and_drops_a_line_when_the_target_agent_is_not_running(caplog: pytest.LogCaptureFixture) -> None:
    """logs and drops a line when the target agent is not running"""
    async with Harness() as h:
        queued = QueuedLog(h.ctx)
        chat = start_chat(h.ctx)
        with caplog.at_level(logging.ERROR):
            chat.keyboard.type("hello")
            await chat.keyboard.drained()
        assert queued.entries == []
        assert [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR] == [
            'ui-stdio: agent "main" is not running'
        ]
        chat.keyboard.close()
        await chat.timer.armed.wait()  # a dropped line is no submitted work: EOF exits at once
        chat.timer.fire()
        assert chat.exits == [0]


async def test_drives_the_agent_named_in_config_not_a_hardcoded_id() -> None:
    """drives the agent named in config, not a hardcoded id"""
    async with Harness([text_response("ok")]) as h:
        main = h.agent("main")
        helper = h.agent("helper")
        queued = QueuedLog(h.ctx)
        chat = start_chat(h.ctx, {"agent": "helper"})
        chat.keyboard.type("for the helper")
        await chat.keyboard.drained()
        await helper.when_idle()
        assert queued.entries == [("helper", "for the helper", False)]
        assert user_texts(helper) == ["for the helper"]
        assert user_texts(main) == []


async def test_logs_a_line_the_agent_refuses_and_keeps_reading(caplog: pytest.LogCaptureFixture) -> None:
    """A raising ``agent/queued`` listener reaches ``send``: the chat logs it and reads on."""
    async with Harness([text_response("one"), text_response("two")]) as h:
        agent = h.agent("main")
        refusals = [RuntimeError("queue is closed for lunch")]

        def veto(_agent: Agent, _content: Any, _info: Any) -> None:
            if refusals:
                raise refusals.pop()

        h.ctx.on(AGENT_QUEUED, veto)
        chat = start_chat(h.ctx)
        with caplog.at_level(logging.ERROR):
            chat.keyboard.type("first")
            await chat.keyboard.drained()
        assert 'ui-stdio: agent "main" did not take the line: queue is closed for lunch' in caplog.messages
        await agent.when_idle()  # the message was queued before the listener raised
        chat.keyboard.type("second")
        await chat.keyboard.drained()
        await agent.when_idle()
        assert user_texts(agent) == ["first", "second"]


async def test_an_input_that_fails_counts_as_ended(caplog: pytest.LogCaptureFixture) -> None:
    """A read error is logged and handled like end of input (here: no work, so exit)."""

    async def broken() -> AsyncIterator[str]:
        yield "   "
        raise OSError("input/output error")

    async with Harness() as h:
        chat = new_chat()
        runtime = chat.runtime
        with caplog.at_level(logging.ERROR):
            create_stdio_chat(h.ctx, {}, type(runtime)(broken(), runtime.output, runtime.exit, runtime.timer))
            await chat.timer.armed.wait()
        assert "ui-stdio: reading input failed, treating it as ended: input/output error" in caplog.messages
        chat.timer.fire()
        assert chat.exits == [0]


def turn_users(agent: Agent) -> list[list[str]]:
    """The user texts of each turn, in order."""
    turns: list[list[str]] = []
    for event in agent.session.events:
        if type(event) is TurnStartEvent:
            turns.append([])
        elif type(event) is UserMessageEvent:
            turns[-1].extend(block.text for block in event.data.content if type(block) is TextBlock)
    return turns


async def test_one_turn_per_line_sends_piped_lines_as_separate_turns() -> None:
    """oneTurnPerLine: lines that arrive together become one turn each, in order; the exit waits for the last."""
    async with Harness([text_response("a"), text_response("b"), text_response("c")]) as h:
        agent = h.agent("main")
        chat = start_chat(h.ctx, {"oneTurnPerLine": True})
        chat.keyboard.type("first\r", "  \r", "second\r", "third\r")
        chat.keyboard.close()
        await chat.timer.armed.wait()
        assert turn_users(agent) == [["first"], ["second"], ["third"]]
        assert agent.status == "idle"


async def test_one_turn_per_line_waits_for_a_turn_already_running() -> None:
    async with Harness([HANG, text_response("after")]) as h:
        agent = h.agent("main")
        agent.send([TextBlock(text="before")])
        await running(h, agent)
        chat = start_chat(h.ctx, {"oneTurnPerLine": True})
        chat.keyboard.type("queued\r")
        await chat.keyboard.drained()
        assert turn_users(agent) == [["before"]]  # not steered into the running turn
        agent.cancel()
        chat.keyboard.close()
        await chat.timer.armed.wait()
        assert turn_users(agent) == [["before"], ["queued"]]


async def test_one_turn_per_line_skips_lines_the_agent_does_not_take(caplog: pytest.LogCaptureFixture) -> None:
    async with Harness([]) as h:
        chat = start_chat(h.ctx, {"oneTurnPerLine": True})
        with caplog.at_level(logging.ERROR):
            chat.keyboard.type("nobody\r", "home\r")
            await chat.keyboard.drained()
        assert caplog.text.count('agent "main" is not running') == 2
        chat.keyboard.close()
        await chat.timer.armed.wait()
