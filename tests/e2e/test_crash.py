"""Crash safety (issue: durable sessions): SIGKILL an agent mid-turn at many different moments;
every resulting log loads, nothing durable is lost or rewritten, an interrupted final turn is
closed with ``turn/end {kind: interrupted}``, and a resumed agent completes the next turn."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh.core.agent import AgentOptions, ResumeAgentOptions
from dsh.core.llm import text, variant_tag
from dsh.core.persistence import SESSION_PERSISTENCE
from dsh.core.session import CompletedReason, TurnEndData, TurnEndEvent, last_turn_number
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response
from tests.e2e.crash_agent import digest

CHILD = Path(__file__).with_name("crash_agent.py")
PROJECT = Path(__file__).resolve().parents[2]
RUNS = 20


async def run_and_kill(root: Path | str, session_id: str, delay: float) -> list[tuple[int, str]]:
    """Start the child, kill it with SIGKILL ``delay`` seconds after it is ready; return its checkpoints."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        str(CHILD),
        str(root),
        session_id,
        "6",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=env,
    )
    assert child.stdout is not None
    checkpoints: list[tuple[int, str]] = []
    first = await child.stdout.readline()
    assert first.strip() == b"ready"

    async def collect() -> None:
        assert child.stdout is not None
        async for raw in child.stdout:
            parts = raw.decode().split()
            if parts and parts[0] == "flushed":
                checkpoints.append((int(parts[1]), parts[2]))

    reader = asyncio.ensure_future(collect())
    await asyncio.sleep(delay)
    if child.returncode is None:
        child.send_signal(signal.SIGKILL)
    await child.wait()
    await reader
    return checkpoints


async def verify(
    root: Path, session_id: str, checkpoints: list[tuple[int, str]], backend: tuple[Any, Any] | None = None
) -> None:
    """``backend``: the persistence plugin and its config (default: JSONL under ``root``)."""
    async with Harness([text_response("after the crash")]) as h:
        plugin, config = backend or (SessionPersistenceJsonl, {"root": str(root)})
        await h.ctx.plugin(plugin, config)
        persistence = h.ctx.get(SESSION_PERSISTENCE)
        assert persistence is not None
        if not await persistence.has(session_id):
            assert checkpoints == [] or checkpoints[-1][0] == 0
            return
        loaded = await persistence.load(session_id)
        events: list[Any] = list(loaded.events)
        assert [e.seq for e in events] == list(range(len(events)))
        for count, expected in checkpoints:
            assert len(events) >= count, "a durable event was lost"
            assert digest(events, count) == expected, "a durable event was rewritten"
        kinds = [e.type for e in events]
        assert kinds.count("turn/start") == kinds.count("turn/end")
        ends = [variant_tag(e.data.reason) for e in events if type(e) is TurnEndEvent]
        assert set(ends) <= {"completed", "interrupted"}
        assert "interrupted" not in ends[:-1]
        agent = await h.agents.resume(
            ResumeAgentOptions(agent_id="again", resume_session_id=session_id, agent_options=AgentOptions(model="mock"))
        )
        last = last_turn_number(events)
        agent.send([text("continue")])
        for _ in range(10000):
            if agent.session.events[-1].type == "turn/end" and agent.status == "idle":
                break
            await asyncio.sleep(0)
        await agent.when_idle()
        assert last_turn_number(agent.session) == last + 1
        assert agent.session.events[-1] == TurnEndEvent(
            seq=agent.session.events[-1].seq,
            time=agent.session.events[-1].time,
            data=TurnEndData(turn=last + 1, reason=CompletedReason()),
        )


@pytest.mark.e2e
@pytest.mark.timeout(300)
async def test_sigkill_at_random_points_never_loses_or_rewrites_committed_events(tmp_path: Path) -> None:
    rng = random.Random(20261129)
    interrupted = 0
    for run in range(RUNS):
        root = tmp_path / f"run-{run}"
        session_id = f"crash-{run}"
        checkpoints = await run_and_kill(root, session_id, rng.uniform(0.0, 0.35))
        await verify(root, session_id, checkpoints)
        files = list(root.rglob("*.jsonl"))
        if files and '"interrupted"' in files[0].read_text():
            interrupted += 1
    assert interrupted > 0, "no run was killed inside a turn; the delays miss the streaming window"
