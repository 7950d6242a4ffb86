"""Scale job: many idle agents in one process, and what each one costs in memory."""

from __future__ import annotations

import asyncio
import tempfile
from typing import Any

from dsh.agent_loop import AGENT_LOOP
from dsh.core.agent import AgentOptions
from dshbench.probe import Probe, current_rss_kb, peak_rss_kb
from dshbench.stack import MODEL, UNUSED_URL, StackOptions, boot


async def idle_agents_job(params: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """Create ``agents`` loop agents on the full stack and let their drivers park; RSS before and after."""
    with tempfile.TemporaryDirectory(prefix="dsh-bench-") as scratch:
        options = StackOptions(base_url=UNUSED_URL, persistence="jsonl", store=scratch, noop_tool=True)
        ctx = await boot(options)
        try:
            await asyncio.sleep(0)
            before = current_rss_kb()
            loop = ctx[AGENT_LOOP]
            with probe.region() as span:
                agents = [loop.create(f"agent-{n}", AgentOptions(model=MODEL)) for n in range(params["agents"])]
                for _ in range(3):  # let every driver task start and park on its inbox
                    await asyncio.sleep(0)
            after = current_rss_kb()
            parked = sum(1 for agent in agents if agent.status == "idle")
        finally:
            await ctx.dispose()
    return {
        "rssBeforeKB": before,
        "rssAfterKB": after,
        "peakRssKB": peak_rss_kb(),
        "agents": len(agents),
        "idle": parked,
        "cpu": span.cpu,
        "wall": span.wall,
    }
