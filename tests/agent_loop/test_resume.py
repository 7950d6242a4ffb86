"""SPEC §8.13 (config-driven session id) and §8.16 (the factory's create/resume over JSONL)."""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from dsh.agent_loop import AgentLoop
from dsh.core.agent import AGENT_CREATED, AgentOptions, CreateAgentOptions, ResumeAgentOptions
from dsh.core.llm import UNSET
from dsh.core.persistence import SESSION_PERSISTENCE, LoadedSession, MemoryPersistence, MemoryStorage, StoredPrefix
from dsh.core.session import SessionMeta, TurnStartEvent
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response
from tests.agent_loop.helpers import of_type, request_texts, text


async def run_turn(agent: Any, prompt: str, count: int = 1) -> None:
    """Send ``prompt`` and return once the turn ended and its durability flush settled.

    ``turn/end`` is logged before the flush (which may wait on file I/O in a worker
    thread); ``when_idle`` then waits for the flush.
    """
    agent.send(text(prompt))
    async with asyncio.timeout(60):  # a safety net: the turn's writes run in worker threads
        while len(of_type(agent.session, "turn/end")) < count:
            await asyncio.sleep(0.001)
    await agent.when_idle()


class LogSignal(logging.Handler):
    """A future resolved by the first log record containing ``text`` (emitted on the loop thread)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
        self.seen: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage() and not self.seen.done():
            self.seen.set_result(None)


# ------------------------------------------------------------------------- §8.13
async def test_config_driven_create_uses_a_fresh_id_session_uuid_per_run(tmp_path: Path) -> None:
    """config-driven create uses a fresh ${id}-session-<uuid> per run (restart-safe)"""
    ids: list[str] = []
    for _ in range(2):
        async with Harness([text_response("ok")], with_loop=False) as h:
            await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(tmp_path)})
            await h.ctx.plugin(AgentLoop, {"agents": [{"id": "cfg", "model": "mock"}]})
            agent = h.agents.get("cfg")
            assert agent is not None
            assert re.fullmatch(r"cfg-session-[0-9a-f-]{36}", agent.session.id)
            ids.append(agent.session.id)
            await run_turn(agent, "hi")
            assert of_type(agent.session, "turn/end")[0]["reason"] == {"kind": "completed"}
    assert ids[0] != ids[1]


async def test_config_driven_resume_session_id_continues_a_persisted_session(tmp_path: Path) -> None:
    """config-driven resumeSessionId continues a persisted session (env-var resume)"""
    async with Harness([text_response("noted")]) as h:
        await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(tmp_path)})
        agent = h.agents.create(CreateAgentOptions(agent_id="first", session_id="sticky-1"))
        agent.options.model = "mock"
        await run_turn(agent, "remember me")
    async with Harness([], with_loop=False) as h:
        created: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        h.ctx.on(AGENT_CREATED, created.set_result)
        await h.ctx.plugin(AgentLoop, {"agents": [{"id": "main", "model": "mock", "resumeSessionId": "sticky-1"}]})
        assert h.agents.get("main") is None  # deferred until persistence exists
        await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(tmp_path)})
        await created
        agent = h.agents.get("main")
        assert agent is not None
        assert agent.session.id == "sticky-1"
        assert "remember me" in str(agent.session.derive_messages())


async def test_config_driven_resume_of_a_missing_session_is_contained(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """config-driven resume of a missing session is contained: logs a warning, no agent, no crash"""
    async with Harness([], with_loop=False) as h:
        await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(tmp_path)})
        signal = LogSignal('config-driven resume of "does-not-exist" failed')
        logging.getLogger("dsh").addHandler(signal)
        try:
            with caplog.at_level(logging.WARNING):
                fiber = await h.ctx.plugin(
                    AgentLoop, {"agents": [{"id": "main", "model": "mock", "resumeSessionId": "does-not-exist"}]}
                )
                await signal.seen
        finally:
            logging.getLogger("dsh").removeHandler(signal)
        assert 'config-driven resume of "does-not-exist" failed' in caplog.text
        assert h.agents.get("main") is None
        assert fiber.state.value == "active"


# ------------------------------------------------------------------------- §8.16
async def test_create_agent_uses_the_caller_supplied_session_id(tmp_path: Path) -> None:
    """createAgent uses the caller-supplied sessionId (not ${id}-session)"""
    async with Harness([]) as h:
        await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(tmp_path)})
        agent = h.agents.create(CreateAgentOptions(agent_id="a", session_id="chosen", meta=SessionMeta(cwd="/w")))
        assert agent.session.id == "chosen"
        assert agent.session.header.cwd == "/w"


async def test_create_agent_rejects_a_duplicate_agent_id_before_creating_the_session() -> None:
    """createAgent rejects a duplicate agent id BEFORE creating the session (no orphan)"""
    async with Harness([]) as h:
        h.agents.create(CreateAgentOptions(agent_id="a", session_id="s1"))
        with pytest.raises(Exception, match="already registered"):
            h.agents.create(CreateAgentOptions(agent_id="a", session_id="s2"))
        assert h.sessions.get("s2") is None


async def test_create_agent_works_without_meta_no_cwd() -> None:
    """createAgent works without meta (no cwd)"""
    async with Harness([]) as h:
        agent = h.agents.create(CreateAgentOptions(agent_id="a", session_id="s1"))
        assert agent.session.header.cwd is UNSET


async def _persist_one_turn(root: Path, session_id: str, meta: SessionMeta | None = None) -> list[Any]:
    async with Harness([text_response("first answer")]) as h:
        await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(root)})
        agent = h.agents.create(
            CreateAgentOptions(agent_id="a", session_id=session_id, meta=meta, agent_options=AgentOptions(model="mock"))
        )
        await run_turn(agent, "first question")
        return agent.session.derive_messages()


async def test_resume_of_a_session_with_no_cwd_carries_an_undefined_cwd_header(tmp_path: Path) -> None:
    """resume of a session with no cwd carries an undefined cwd header"""
    await _persist_one_turn(tmp_path, "nocwd")
    async with Harness([]) as h:
        await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(tmp_path)})
        agent = await h.agents.resume(ResumeAgentOptions(agent_id="r", resume_session_id="nocwd"))
        assert agent.session.header.cwd is UNSET
        assert agent.session.header.parent_session is UNSET


async def test_resume_of_a_forked_session_preserves_the_parent_session_lineage(tmp_path: Path) -> None:
    """resume of a forked session preserves the parentSession lineage in the header"""
    await _persist_one_turn(tmp_path, "child", SessionMeta(cwd="/w", parent_session="parent-1"))
    async with Harness([]) as h:
        await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(tmp_path)})
        agent = await h.agents.resume(ResumeAgentOptions(agent_id="r", resume_session_id="child"))
        assert agent.session.header.parent_session == "parent-1"
        assert agent.session.header.cwd == "/w"


async def test_an_idle_inject_is_flushed_durably_on_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """an idle inject() is flushed durably on its own (survives without explicit flush/dispose)"""
    written: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    append_batch = SessionPersistenceJsonl.append_batch

    async def signalling_append(self: SessionPersistenceJsonl, *args: Any) -> None:
        await append_batch(self, *args)
        if not written.done():
            written.set_result(None)

    monkeypatch.setattr(SessionPersistenceJsonl, "append_batch", signalling_append)
    async with Harness([]) as h:
        await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(tmp_path)})
        agent = h.agents.create(CreateAgentOptions(agent_id="a", session_id="inj"))
        agent.inject(text("durable note"))
        await written
        assert any("durable note" in path.read_text() for path in tmp_path.rglob("*.jsonl"))


async def test_an_idle_inject_survives_persist_and_resume(tmp_path: Path) -> None:
    """an idle inject() survives persist + resume (turn-enclosed, not dropped as crash tail)"""
    async with Harness([]) as h:
        await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(tmp_path)})
        agent = h.agents.create(CreateAgentOptions(agent_id="a", session_id="inj2"))
        agent.inject(text("keep me"))
    async with Harness([]) as h:
        await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(tmp_path)})
        resumed = await h.agents.resume(ResumeAgentOptions(agent_id="r", resume_session_id="inj2"))
        kinds = [e.type for e in resumed.session.events]
        assert kinds == ["turn/start", "context/message", "turn/end"]
        assert "keep me" in str(resumed.session.derive_messages())


async def test_resume_reloads_a_persisted_session_history_and_turn_numbering_continue(tmp_path: Path) -> None:
    """resume reloads a persisted session: history + turn numbering continue, no duplicate seqs"""
    before = await _persist_one_turn(tmp_path, "resumable", SessionMeta(cwd="/w"))
    async with Harness([text_response("second answer")]) as h:
        await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(tmp_path)})
        agent = await h.agents.resume(
            ResumeAgentOptions(agent_id="r", resume_session_id="resumable", agent_options=AgentOptions(model="mock"))
        )
        assert agent.session.derive_messages() == before
        await run_turn(agent, "second question")
        assert [d["turn"] for d in of_type(agent.session, "turn/start")] == [1, 2]
        assert [e.seq for e in agent.session.events] == list(range(len(agent.session.events)))
        assert "first question" in request_texts(h.model.requests[0])
    async with Harness([]) as h:
        await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(tmp_path)})
        persistence = h.ctx.get(SESSION_PERSISTENCE)
        assert persistence is not None
        loaded = await persistence.load("resumable")
        assert [e.seq for e in loaded.events] == list(range(len(loaded.events)))
        assert [e.data.turn for e in loaded.events if type(e) is TurnStartEvent] == [1, 2]


async def test_resume_rejects_when_session_persistence_is_not_configured() -> None:
    """resume rejects when session persistence is not configured"""
    async with Harness([]) as h:
        with pytest.raises(Exception, match="session persistence is not configured"):
            await h.agents.resume(ResumeAgentOptions(agent_id="r", resume_session_id="x"))


class RecordingMemory(MemoryPersistence):
    """Memory persistence that records what ``load`` handed out and counts storage reads."""

    def __init__(self, ctx: Any, config: Any) -> None:
        self.loads: list[LoadedSession] = []
        self.reads = 0
        super().__init__(ctx, config)

    async def load_stored(self, id: str) -> StoredPrefix | None:
        self.reads += 1
        return await super().load_stored(id)

    def load(self, id: str) -> Any:
        async def recorded() -> LoadedSession:
            loaded = await super(RecordingMemory, self).load(id)
            self.loads.append(loaded)
            return loaded

        return recorded()


async def test_resume_hands_the_loaded_events_over_and_persistence_claims_them_without_a_re_read() -> None:
    """(resume seeds the live session with load()'s events uncopied; no second read of the log)"""
    storage = MemoryStorage()
    async with Harness([text_response("first answer")]) as h:
        await h.ctx.plugin(MemoryPersistence, {"store": storage})
        agent = h.agents.create(
            CreateAgentOptions(agent_id="a", session_id="m1", agent_options=AgentOptions(model="mock"))
        )
        await run_turn(agent, "first question")
    async with Harness([text_response("second answer")]) as h:
        fiber = await h.ctx.plugin(RecordingMemory, {"store": storage})
        backend: RecordingMemory = fiber.instance
        agent = await h.agents.resume(
            ResumeAgentOptions(agent_id="r", resume_session_id="m1", agent_options=AgentOptions(model="mock"))
        )
        [loaded] = backend.loads
        assert len(agent.session.events) == len(loaded.events) > 0
        assert all(live is given for live, given in zip(agent.session.events, loaded.events, strict=True))
        await backend.inits[agent.session]
        assert backend.reads == 1
        await run_turn(agent, "second question")
        assert [event.seq for event in storage.logs["m1"][1]] == list(range(len(agent.session.events)))
