"""Scale job: many agents streaming at once in one process, from a paced wire server.

Each agent sends one prompt; the wire server (in the parent process) answers every
request with ``chunks`` :class:`~dsh.testing.wire.SentAt` deltas paced at its
``pace`` (20 a second), so all the streams are open together. A ``session/event``
listener reads each logged text delta's stamps: the delay of a chunk is the time
from the server writing it to the event being in the session log. The delays are
reported over the whole run (the start, where 1,000 requests, connections and new
logs are set up at once, included) and over the steady part: the chunks sent after
the last stream's first chunk was logged, while every stream is open; the CPU per
second is reported for that steady part too. The steady part ends when the first
stream's last chunk is logged: after that, turns end (answers assembled, logs synced)
while the other streams still run, and the worst delay of the chunks logged then is
reported on its own. The listener only notes each delta's text and arrival time, in two
flat lists (a tuple per chunk would be 20,000 tracked allocations a second, which drive
the measured process's collector), and each session's first and latest arrival; the
CPU clock, a system call, is read by a timer 20 times a second, not per chunk. The
stamps are read after the measured region, so the measurement costs the measured
process as little as it can. The DeepSeek adapter gets a connection pool without a cap
(its shipped session allows 100 connections, which would queue the other 900 streams:
see ``docs/scaling.md``) and the shipped session's timeouts
(:data:`~dsh.adapters.deepseek.transport.CONNECT_TIMEOUT`, no total; the adapter bounds
each read itself). The bare reader uses the same session settings.
The agents' process loads ``llm-admission`` as the built-in profiles do (a burst of new
requests starts a few at a time) and ``gc-tuning`` last, as a ``dsh batch`` worker does; the bare
reader's process gets the same collector settings, and the C allocator in the state the
agents' process is in once started (:func:`_as_after_a_start`), so the floor it sets is
measured under the same collector and allocator.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from typing import Any

from dsh.adapters.deepseek import DeepSeekAdapter
from dsh.adapters.deepseek.transport import CONNECT_TIMEOUT
from dsh.agent_loop import AGENT_LOOP
from dsh.core.agent import AgentOptions
from dsh.core.llm import LLM, TextDeltaChunk, text
from dsh.core.session import SESSION_EVENT, AssistantChunkEvent, Session, SessionEvent
from dsh.plugins.gc_tuning import TUNINGS
from dsh.plugins.gc_tuning import Config as GcConfig
from dsh.testing.wire import sent_at_stamps
from dshbench.probe import Probe, peak_rss_kb
from dshbench.stack import MODEL, StackOptions, boot

SAMPLE_EVERY = 0.05
"""Seconds between two readings of the process's CPU clock in the streaming job."""


def _http_session() -> Any:
    """An uncapped pool with the adapter's shipped session timeouts (no total, a connect bound)."""
    import aiohttp

    timeout = aiohttp.ClientTimeout(total=None, connect=CONNECT_TIMEOUT)
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout)


def _delays(texts: list[str], nows: list[int]) -> list[tuple[int, int]]:
    """(sent, delay) in ns of every stamp in the noted texts, each arrived at the matching ``nows`` entry."""
    return [(stamp, now - stamp) for text, now in zip(texts, nows, strict=True) for stamp in sent_at_stamps(text)]


async def _sample_cpu(samples: list[tuple[int, float]]) -> None:
    """Note ``(wall ns, process CPU s)`` every :data:`SAMPLE_EVERY` seconds until cancelled.

    The CPU clock is a system call: read per chunk it cost the measured process more
    than the work measured, so it is read 20 times a second instead.
    """
    while True:
        samples.append((time.time_ns(), time.process_time()))
        await asyncio.sleep(SAMPLE_EVERY)


def _steady_cpu(samples: list[tuple[int, float]], nows: list[int], start: int, end: int) -> tuple[float, float]:
    """(cores, CPU µs per chunk) between the first sample after ``start`` and the last one before ``end``."""
    inside = [sample for sample in samples if start <= sample[0] <= end]
    if len(inside) < 2:
        return 0.0, 0.0
    (wall_from, cpu_from), (wall_to, cpu_to) = inside[0], inside[-1]
    chunks = sum(1 for now in nows if wall_from < now <= wall_to)
    return (cpu_to - cpu_from) / ((wall_to - wall_from) / 1e9), (cpu_to - cpu_from) / max(1, chunks) * 1e6


async def streaming_job(params: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """``agents`` agents stream one answer each at once; CPU per second of streaming and the worst chunk delay."""
    texts: list[str] = []  # each logged delta's text ...
    nows: list[int] = []  # ... and its arrival in ns
    first: dict[str, int] = {}  # when each session logged its first chunk
    last: dict[str, int] = {}  # when each session logged its latest chunk
    samples: list[tuple[int, float]] = []  # (wall ns, CPU s), see _sample_cpu

    def on_event(session: Session, event: SessionEvent) -> None:
        if type(event) is AssistantChunkEvent and type(event.data.chunk) is TextDeltaChunk:
            now = time.time_ns()
            texts.append(event.data.chunk.text)
            nows.append(now)
            key = session.id
            last[key] = now
            if key not in first:
                first[key] = now

    with tempfile.TemporaryDirectory(prefix="dsh-bench-") as scratch:
        options = StackOptions(
            persistence="jsonl", store=scratch, invariants=False, bash=False, admission=True, gc_tuning=True
        )
        ctx = await boot(options)
        session = _http_session()
        adapter = DeepSeekAdapter("bench-key", params["baseUrl"], models=[MODEL], session=session)
        sampler = asyncio.ensure_future(_sample_cpu(samples))
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
            sampler.cancel()
            await ctx.dispose()
            await session.close()
    everyone = max(first.values())  # from here on, every stream is open at once ...
    closing = min(last.values())  # ... until the first one ends
    chunks = _delays(texts, nows)
    delays = sorted(delay for _, delay in chunks)
    open_delays = sorted(delay for sent, delay in chunks if sent >= everyone and sent + delay <= closing) or [0]
    ending = max((delay for sent, delay in chunks if sent + delay > closing), default=0)
    cores, per_chunk = _steady_cpu(samples, nows, everyone, closing)
    return {
        "cpu": span.cpu,
        "wall": span.wall,
        "chunks": len(delays),
        "worstDelayMs": delays[-1] / 1e6,
        "p99DelayMs": delays[int(len(delays) * 0.99)] / 1e6,
        "steadyChunks": len(open_delays),
        "steadyWorstDelayMs": open_delays[-1] / 1e6,
        "steadyP99DelayMs": open_delays[int(len(open_delays) * 0.99)] / 1e6,
        "endingWorstDelayMs": ending / 1e6,
        "steadyCores": cores,
        "steadyCpuPerChunkUs": per_chunk,
        "peakRssKB": peak_rss_kb(),
    }


MMAP_WARMUP = 512 * 1024
"""Bytes of the one block :func:`_as_after_a_start` allocates and frees."""


def _as_after_a_start() -> None:
    """Put the C allocator where the agents' process has it once started: free one large block.

    asyncio reads each socket into a new 256 KiB buffer and shrinks it to what arrived.
    glibc maps a block that large with ``mmap`` until a freed mapped block raises its
    threshold above it; the agents' process has freed such blocks while it started, so
    it reads from the heap, but a process that only reads would map, shrink and unmap
    one buffer per chunk (three system calls and page faults, about 15 µs a chunk on the
    bench's VM) and set a floor above what the machine and the server set.
    """
    block = bytearray(MMAP_WARMUP)
    del block


async def bare_streaming_job(params: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """The same streams read by a bare aiohttp client (no dsh): the floor the machine and the server set."""
    import json

    texts: list[str] = []  # flat lists, as in streaming_job
    nows: list[int] = []
    body = {"model": MODEL, "messages": [{"role": "user", "content": "stream"}], "stream": True}

    async def read(session: Any) -> None:
        async with session.post(params["baseUrl"] + "/chat/completions", json=body) as response:
            async for line in response.content:
                if line.startswith(b"data: {"):
                    delta = json.loads(line[6:])["choices"]
                    now = time.time_ns()
                    if delta and delta[0]["delta"].get("content"):
                        texts.append(delta[0]["delta"]["content"])
                        nows.append(now)

    untune = TUNINGS.add(GcConfig())  # the collector as gc-tuning sets it for dsh
    _as_after_a_start()
    try:
        async with _http_session() as session:
            with probe.region() as span:
                await asyncio.gather(*(read(session) for _ in range(params["agents"])))
    finally:
        untune()
    chunks = sorted(delay for _, delay in _delays(texts, nows))
    return {
        "cpu": span.cpu,
        "wall": span.wall,
        "chunks": len(chunks),
        "worstDelayMs": chunks[-1] / 1e6,
        "p99DelayMs": chunks[int(len(chunks) * 0.99)] / 1e6,
    }
