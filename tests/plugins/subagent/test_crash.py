"""Resume after a SIGKILL while a foreground child runs: both logs load, balanced, still linked."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

from dsh.core.agent import AgentOptions, ResumeAgentOptions
from dsh.core.llm import text
from dsh.core.session import InterruptedReason, TurnEndEvent
from dsh.core.subagent import SubagentStartEvent
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response
from tests.plugins.subagent.helpers import assert_balanced, boot, gone_by, persistence, pid_of

CHILD = Path(__file__).with_name("crash_parent.py")
PROJECT = Path(__file__).resolve().parents[3]


async def test_resume_after_sigkill_while_a_child_runs(tmp_path: Path) -> None:
    root, pidfile = tmp_path / "logs", tmp_path / "child.pid"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(CHILD),
        str(root),
        str(pidfile),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 30)
    word, parent_id, child_id = line.decode().split()
    assert word == "ready"
    sleeper = await pid_of(pidfile)
    process.send_signal(signal.SIGKILL)
    await process.wait()

    async with Harness([text_response("resumed")]) as h:
        await boot(h, root)
        stored = persistence(h)
        child_log = await stored.load(child_id)
        assert child_log.meta.parent_session == parent_id
        assert child_log.meta.parent_call_id == "c1"
        parent = await h.agents.resume(
            ResumeAgentOptions(agent_id="main", resume_session_id=parent_id, agent_options=AgentOptions(model="mock"))
        )
        child = await h.agents.resume(ResumeAgentOptions(agent_id="child", resume_session_id=child_id))
        assert child.session.header.delegation_depth == 1
        assert child.session.header.origin == "subagent"
        for agent in (parent, child):
            events = list(agent.session.events)
            assert_balanced(events)
            last = [event for event in events if type(event) is TurnEndEvent][-1]
            assert isinstance(last.data.reason, InterruptedReason)
        starts = [event.data for event in parent.session.events if type(event) is SubagentStartEvent]
        assert [start.child_session for start in starts] == [child_id]
        parent.send([text("again")])
        await parent.when_idle()
        assert_balanced(list(parent.session.events))
    assert await gone_by(sleeper, time.monotonic() + 10)  # the dead executor's watchdog kills the sleeper
