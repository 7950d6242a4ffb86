"""SessionPersistence.fork on the real backends: the stored fork resumes with exactly the source's history.

Each backend stores a source session run by the real loop against a scripted model;
then a fresh stack (a new "process" over the same storage) forks it after turn 1 and
resumes the fork: the model request the fork derives for the next prompt equals the
one the source derived for its own turn 2.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from dsh.core.agent import AgentOptions, CreateAgentOptions, ResumeAgentOptions
from dsh.core.errors import HarnessError
from dsh.core.llm import GenerateOptions, text
from dsh.core.persistence import SESSION_PERSISTENCE, MemoryPersistence, MemoryStorage
from dsh.core.session import SessionMeta, TurnEndEvent, TurnStartEvent
from dsh.kernel import Context
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl
from dsh.plugins.persistence_sqlite import SessionPersistenceSqlite
from dsh.testing.harness import Harness
from dsh.testing.scripted import ScriptEntry, text_response, tool_call_response

Mount = Callable[[Context], Awaitable[None]]
OPTIONS = AgentOptions(model="mock", system_prompt="be brief")


def _backend(kind: str, tmp_path: Path) -> Mount:
    storage = MemoryStorage()

    async def mount(ctx: Context) -> None:
        if kind == "jsonl":
            await ctx.plugin(SessionPersistenceJsonl, {"root": str(tmp_path / "sessions")})
        elif kind == "sqlite":
            await ctx.plugin(SessionPersistenceSqlite, {"path": str(tmp_path / "sessions.db")})
        else:
            await ctx.plugin(MemoryPersistence, {"store": storage})

    return mount


@pytest.fixture(params=["jsonl", "sqlite"])
def mount(request: pytest.FixtureRequest, tmp_path: Path) -> Mount:
    return _backend(str(request.param), tmp_path)


def _request(options: GenerateOptions) -> tuple[Any, ...]:
    return (options.model, options.messages, options.system, options.tools)


async def _prompt(agent: Any, words: str) -> None:
    agent.send([text(words)])
    await agent.when_idle()


async def _run_source(mount: Mount) -> list[GenerateOptions]:
    """Run two turns (the first with a tool call) on session "src" and store it; the model requests."""
    script: list[ScriptEntry] = [
        tool_call_response("c1", "missing_tool", {"x": 1}, text="Trying."),
        text_response("one"),
        text_response("two"),
    ]
    async with Harness(script) as h:
        await mount(h.ctx)
        agent = h.loop.create_agent(
            CreateAgentOptions(agent_id="main", session_id="src", meta=SessionMeta(cwd="/w"), agent_options=OPTIONS)
        )
        await _prompt(agent, "first")
        await _prompt(agent, "second")
        h.model.assert_consumed()
        return list(h.model.requests)


async def test_a_stored_fork_resumes_with_exactly_the_source_history(mount: Mount) -> None:
    source_requests = await _run_source(mount)
    async with Harness([text_response("two, forked")]) as h:
        await mount(h.ctx)
        persistence = h.ctx[SESSION_PERSISTENCE]
        forked = await persistence.fork("src", 1, id="fork")
        source = await persistence.load("src")
        assert forked.events == source.events[: forked.meta.seed_length or 0]
        assert type(forked.events[-1]) is TurnEndEvent
        assert forked.events[-1].data.turn == 1
        assert [event.seq for event in forked.events] == list(range(len(forked.events)))
        stored = await persistence.load("fork")
        assert stored.meta == forked.meta
        assert (stored.meta.parent_session, stored.meta.cwd) == ("src", "/w")
        assert {header.id for header in await persistence.list()} == {"src", "fork"}
        agent = await h.loop.resume(
            ResumeAgentOptions(agent_id="main", resume_session_id="fork", agent_options=OPTIONS)
        )
        assert agent.session.header == forked.meta
        await _prompt(agent, "second")
        (request,) = h.model.requests
        assert _request(request) == _request(source_requests[2])
        starts = [event.data.turn for event in agent.session.events if type(event) is TurnStartEvent]
        assert starts == [1, 2]


async def test_forking_a_live_session_reads_its_newest_events_without_loading_it(tmp_path: Path) -> None:
    mount = _backend("memory", tmp_path)
    async with Harness([text_response("one"), text_response("two")]) as h:
        await mount(h.ctx)
        agent = h.loop.create_agent(CreateAgentOptions(agent_id="main", session_id="src", agent_options=OPTIONS))
        await _prompt(agent, "first")
        await _prompt(agent, "second")
        persistence = h.ctx[SESSION_PERSISTENCE]
        forked = await persistence.fork("src")
        assert forked.events == list(agent.session.events)
        assert forked.meta.seed_length == len(agent.session.events)
        assert forked.meta.id != "src"
        assert forked.meta.cwd == agent.session.header.cwd
        agent.send([text("still writing")])  # the source goes on: its persistence was not disturbed
        await agent.when_idle()
        assert len((await persistence.load(forked.meta.id)).events) == forked.meta.seed_length


async def test_a_refused_fork_stores_nothing(tmp_path: Path) -> None:
    mount = _backend("memory", tmp_path)
    async with Harness([text_response("one")]) as h:
        await mount(h.ctx)
        agent = h.loop.create_agent(CreateAgentOptions(agent_id="main", session_id="src", agent_options=OPTIONS))
        await _prompt(agent, "first")
        persistence = h.ctx[SESSION_PERSISTENCE]
        with pytest.raises(HarnessError, match=r"has no turn 4 to fork at \(completed turns: 1\)") as raised:
            await persistence.fork("src", 4, id="fork")
        assert raised.value.code == "INVALID_FORK"
        assert not await persistence.has("fork")
        with pytest.raises(HarnessError, match='session "nope" not found'):
            await persistence.fork("nope")
