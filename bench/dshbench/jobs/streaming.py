"""Scale job: many agents streaming at once in one process, from a paced wire server.

Each agent sends one prompt; the wire server (in the parent process) answers every
request with ``chunks`` :class:`~dsh.testing.wire.SentAt` deltas paced at its
``pace`` (20 a second), so all the streams are open together. A ``session/event``
listener reads each logged text delta's stamps: the delay of a chunk is the time
from the server writing it to the event being in the session log. The DeepSeek
adapter gets a connection pool without a cap (its shipped session allows 100
connections, which would queue the other 900 streams: see ``docs/scaling.md``).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from typing import Any

from dsh.adapters.deepseek import DeepSeekAdapter
from dsh.agent_loop import AGENT_LOOP
from dsh.core.agent import AgentOptions
from dsh.core.llm import LLM, TextDeltaChunk, text
from dsh.core.session import SESSION_EVENT, AssistantChunkEvent, Session, SessionEvent
from dsh.testing.wire import sent_at_stamps
from dshbench.probe import Probe, peak_rss_kb
from dshbench.stack import MODEL, StackOptions, boot


async def streaming_job(params: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """``agents`` agents stream one answer each at once; CPU per second of streaming and the worst chunk delay."""
    import aiohttp

    delays: list[int] = []

    def on_event(_session: Session, event: SessionEvent) -> None:
        if type(event) is AssistantChunkEvent and type(event.data.chunk) is TextDeltaChunk:
            now = time.time_ns()
            delays.extend(now - stamp for stamp in sent_at_stamps(event.data.chunk.text))

    with tempfile.TemporaryDirectory(prefix="dsh-bench-") as scratch:
        options = StackOptions(persistence="jsonl", store=scratch, invariants=False, bash=False)
        ctx = await boot(options)
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        adapter = DeepSeekAdapter("bench-key", params["baseUrl"], models=[MODEL], session=session)
        try:
            ctx[LLM].register_adapter([MODEL], adapter)
            ctx.on(SESSION_EVENT, on_event)
            loop = ctx[AGENT_LOOP]
            agents = [loop.create(f"agent-{n}", AgentOptions(model=MODEL)) for n in range(params["agents"])]
            with probe.region() as span:
                for agent in agents:
                    agent.send([text("stream")])
                await asyncio.gather(*(agent.when_idle() for agent in agents))
        finally:
            await ctx.dispose()
            await session.close()
    delays.sort()
    return {
        "cpu": span.cpu,
        "wall": span.wall,
        "chunks": len(delays),
        "worstDelayMs": delays[-1] / 1e6,
        "p99DelayMs": delays[int(len(delays) * 0.99)] / 1e6,
        "peakRssKB": peak_rss_kb(),
    }
