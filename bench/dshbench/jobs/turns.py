"""Jobs that drive turns through the agent loop, the DeepSeek adapter and a wire server.

Each job runs in its own process (see :mod:`dshbench.child`); the wire server runs in
the parent, so the CPU measured here is the harness's alone. JSONL persistence writes
to a temporary directory removed at the end.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from typing import Any

from dsh.agent_loop import AGENT_LOOP
from dsh.core.agent import AgentOptions
from dsh.core.llm import text
from dshbench.jobs.checks import count, expect_all, expect_turn
from dshbench.probe import Probe, peak_rss_kb
from dshbench.stack import MODEL, StackOptions, boot

FS_FILE = "work.txt"
"""The file the read + edit steps work on (in the job's scratch workspace)."""


def fs_workspace(scratch: str, steps: int) -> str:
    """A workspace holding :data:`FS_FILE`, one ``<n>`` line per step, for the read + edit turn."""
    root = os.path.join(scratch, "workspace")
    os.mkdir(root)
    with open(os.path.join(root, FS_FILE), "w", encoding="utf-8") as file:
        file.writelines(f"<{n}>\n" for n in range(1, steps + 1))
    return root


def _options(params: dict[str, Any], scratch: str) -> StackOptions:
    persistence = params.get("persistence", "jsonl")
    fs_root = fs_workspace(scratch, params["steps"]) if params.get("fs") else None
    return StackOptions(
        base_url=params["baseUrl"],
        persistence=persistence,
        store=scratch,
        invariants=params.get("invariants", True),
        noop_tool=True,
        fs_root=fs_root,
        freeze_startup=True,
        compaction=params.get("compaction", False),
    )


async def turn_job(params: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """One turn of ``steps`` model steps (the wire script decides the tool calls)."""
    with tempfile.TemporaryDirectory(prefix="dsh-bench-") as scratch:
        ctx = await boot(_options(params, scratch))
        try:
            agent = ctx[AGENT_LOOP].create("main", AgentOptions(model=MODEL))
            with probe.region() as span:
                agent.send([text("Run the tool until the script says stop.")])
                await agent.when_idle()
            expect_turn(agent.session, turns=1, steps=params["steps"])
            events = len(agent.session.events)
        finally:
            await ctx.dispose()
    return {"cpu": span.cpu, "wall": span.wall, "children": span.children, "peakRssKB": peak_rss_kb(), "events": events}


async def chunks_job(params: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """Three one-step turns: a warm-up, a short answer and a long one (the wire script sizes them)."""
    with tempfile.TemporaryDirectory(prefix="dsh-bench-") as scratch:
        ctx = await boot(_options(params, scratch))
        try:
            agent = ctx[AGENT_LOOP].create("main", AgentOptions(model=MODEL))
            spans = []
            for turn in range(3):
                with probe.region() as span:
                    agent.send([text(f"answer number {turn}")])
                    await agent.when_idle()
                spans.append(span)
            expect_turn(agent.session, turns=3, steps=3)
            chunks = count(agent.session, "assistant/chunk")
        finally:
            await ctx.dispose()
    short, long = spans[1], spans[2]
    return {"short": vars(short), "long": vars(long), "chunkEvents": chunks}


async def concurrent_job(params: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """``agents`` agents each running ``turns`` turns at once; the total steps and the time they took."""
    with tempfile.TemporaryDirectory(prefix="dsh-bench-") as scratch:
        ctx = await boot(_options(params, scratch))
        try:
            loop = ctx[AGENT_LOOP]
            agents = [loop.create(f"agent-{n}", AgentOptions(model=MODEL)) for n in range(params["agents"])]
            turns = params["turns"]
            with probe.region() as span:
                for turn in range(turns):
                    for agent in agents:
                        agent.send([text(f"turn {turn}")])
                    await asyncio.gather(*(agent.when_idle() for agent in agents))
            steps = expect_all([agent.session for agent in agents], turns=turns)
        finally:
            await ctx.dispose()
    return {"cpu": span.cpu, "wall": span.wall, "steps": steps, "peakRssKB": peak_rss_kb()}
