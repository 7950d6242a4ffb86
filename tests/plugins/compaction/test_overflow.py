"""A "context too long" refusal, as DeepSeek sends it, leads to one compaction and one retry."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

import dsh.adapters.deepseek as deepseek
import dsh.adapters.openai as llm_openai
from dsh.agent_loop import ReactLoopAgent
from dsh.core.agent import AgentOptions
from dsh.core.llm import text
from dsh.core.session import CompactionEvent
from dsh.plugins.compaction import SUMMARY_HEADER, SUMMARY_INSTRUCTION, Compaction
from dsh.plugins.llm_retry import retry_plugin
from dsh.testing.harness import Harness
from dsh.testing.logs import data_json
from dsh.testing.wire import Entry, HttpError, WireServer, text_reply

MODEL = "wire"
LONG = "hello there, " * 100

TOO_LONG = HttpError(
    400,
    {
        "error": {
            "message": "This model's maximum context length is 131072 tokens. However, you requested 140322 tokens "
            "(140322 in the messages, 0 in the completion). Please reduce the length of the messages or completion.",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_request_error",
        }
    },
)
"""DeepSeek's answer to a request over the model's context window."""


async def never(_seconds: float) -> None:  # the retry plugin must not wait for this error
    raise AssertionError("llm-retry retried a context-window error")


@asynccontextmanager
async def stack(*entries: Entry, adapter: Any = deepseek) -> AsyncIterator[tuple[WireServer, ReactLoopAgent]]:
    async with WireServer(entries) as server, Harness() as h:
        await h.ctx.plugin(adapter, {"apiKey": "sk-test", "baseURL": server.base_url, "models": [MODEL]})
        await h.ctx.plugin(retry_plugin(never), {})
        await h.ctx.plugin(Compaction, {})
        yield server, h.loop.create("main", AgentOptions(model=MODEL, system_prompt="Be brief."))


async def turn(agent: ReactLoopAgent, prompt: str) -> None:
    agent.send([text(prompt)])
    async with asyncio.timeout(10):
        await agent.when_idle()


def bodies(server: WireServer) -> list[Any]:
    return [request.json for request in server.requests]


@pytest.mark.parametrize("adapter", [deepseek, llm_openai], ids=["deepseek", "openai"])
async def test_a_context_too_long_error_is_compacted_once_then_sent_again(adapter: Any) -> None:
    entries = (text_reply(LONG), TOO_LONG, text_reply("We said hi."), text_reply("done"))
    async with stack(*entries, adapter=adapter) as (server, agent):
        await turn(agent, "hi")
        await turn(agent, "again")
        assert [data["reason"] for data in data_json(agent.session, "turn/end")] == [
            {"kind": "completed"},
            {"kind": "completed"},
        ]
        first, refused, summary, retried = bodies(server)
        assert refused["messages"][1:] == [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": LONG},
            {"role": "user", "content": "again"},
        ]
        # the summary request is the conversation's prefix, then the instruction
        assert summary["messages"][:3] == first["messages"] + [{"role": "assistant", "content": LONG}]
        assert summary["messages"][3] == {"role": "user", "content": SUMMARY_INSTRUCTION}
        assert retried["messages"] == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": SUMMARY_HEADER + "We said hi."},
            {"role": "user", "content": "again"},
        ]
        [compaction] = [event for event in agent.session.events if type(event) is CompactionEvent]
        assert compaction.data.trigger == "context-overflow"
        assert (compaction.data.turn, compaction.data.step) == (2, 1)


async def test_a_second_refusal_in_the_same_step_ends_the_turn_with_the_error() -> None:
    entries = (text_reply(LONG), TOO_LONG, text_reply("We said hi."), TOO_LONG)
    async with stack(*entries) as (server, agent):
        await turn(agent, "hi")
        await turn(agent, "again")
        last = data_json(agent.session, "turn/end")[-1]["reason"]
        assert last["kind"] == "error"
        assert last["code"] == "CONTEXT_WINDOW_EXCEEDED"
        assert len(server.requests) == 4
        assert len([event for event in agent.session.events if type(event) is CompactionEvent]) == 1


async def test_a_refusal_with_nothing_to_compact_keeps_the_error() -> None:
    async with stack(TOO_LONG) as (server, agent):
        await turn(agent, "hi")
        last = data_json(agent.session, "turn/end")[-1]["reason"]
        assert last["code"] == "CONTEXT_WINDOW_EXCEEDED"
        [compaction] = data_json(agent.session, "compaction")
        assert compaction["error"].startswith("nothing to compact")
        assert len(server.requests) == 1
