"""What the chat terminal view shows of a retry, and the retry policy on the scripted model."""

from __future__ import annotations

import asyncio
import io

from rich.console import Console

from dsh.cli.terminal import TerminalView
from dsh.core.agent import AGENT_REQUEST_ERROR, AGENT_STREAM_CHUNK, Agent, RequestFailure
from dsh.core.errors import LlmError
from dsh.core.llm import text
from dsh.plugins.llm_retry import retry_plugin
from dsh.testing.harness import Harness
from dsh.testing.logs import data_json
from dsh.testing.scripted import HANG, Fail, error_finish, text_response
from tests.plugins.llm_retry.helpers import FakeClock, highest


async def test_the_terminal_view_freezes_the_failed_attempt_and_spins_until_the_retry_streams() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=100, record=True)
    clock = FakeClock()
    script = [
        Fail(LlmError("busy", "SERVER", 503), text_response("half")[:3]),
        text_response("whole"),
        Fail(LlmError("busy", "SERVER")),
        text_response("theirs"),
    ]
    async with Harness(script) as h:
        await h.ctx.plugin(retry_plugin(clock.sleep, highest))
        other = h.agent("other")
        agent = h.agent()
        TerminalView(h.ctx, agent, console)
        agent.send([text("go")])
        await agent.when_idle()
        assert clock.waits == [1.0]
        other.send([text("x")])  # another agent's retry is not drawn
        await other.when_idle()
        assert clock.waits == [1.0, 1.0]
    drawn = console.export_text()
    assert "ha" in drawn
    assert "whole" in drawn
    assert "theirs" not in drawn
    assert data_json(agent.session, "llm/retry")[0]["failure"] == {"message": "busy", "code": "SERVER", "status": 503}


async def test_a_failure_the_policy_does_not_own_reaches_the_next_listener() -> None:
    seen: list[tuple[int, str]] = []

    async def observe(_agent: Agent, _turn: int, _step: int, failure: RequestFailure, proceed: object) -> bool:
        seen.append((failure.attempt, failure.error.code))
        return False

    async with Harness([error_finish("bad", "INVALID_REQUEST")]) as h:
        await h.ctx.plugin(retry_plugin(FakeClock().sleep, highest), {})
        h.ctx.on(AGENT_REQUEST_ERROR, observe)
        agent = h.agent()
        agent.send([text("go")])
        await agent.when_idle()
        assert seen == [(1, "INVALID_REQUEST")]
        assert data_json(agent.session, "turn/end")[0]["reason"]["code"] == "INVALID_REQUEST"


async def test_an_abort_after_a_retry_logs_the_partial_answer_of_the_current_attempt_only() -> None:
    script = [Fail(LlmError("busy", "SERVER"), text_response("stale")[:3]), HANG]
    async with Harness(script) as h:
        await h.ctx.plugin(retry_plugin(FakeClock().sleep, highest))
        agent = h.agent()
        streaming = asyncio.Event()
        h.ctx.on(AGENT_STREAM_CHUNK, lambda *_args: streaming.set() if h.model.remaining == 0 else None)
        agent.send([text("go")])
        async with asyncio.timeout(10):
            await streaming.wait()
            agent.cancel()
            await agent.when_idle()
        messages = data_json(agent.session, "assistant/message")
        assert [message["content"] for message in messages] == [[{"type": "text", "text": "partial"}]]
        assert data_json(agent.session, "turn/end")[0]["reason"] == {"kind": "aborted", "reason": "cancelled"}
