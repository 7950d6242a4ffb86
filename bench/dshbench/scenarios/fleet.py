"""Scenario 7, fleet: ``dsh batch`` on local Ray workers, and 1,000 agents streaming in one process.

Batch: ``dsh batch`` runs a task file on a local Ray cluster it starts with 1, then
2, workers (8 agents each); every task is one step (the wire server answers at once).
The rate counts the tasks over the time from the last worker being up to the
command's end (cluster start-up and the workers' boot are reported apart, as the
wall time of the whole command). Streaming: ``stream_agents`` agents in one process each stream an answer of
``stream_chunks`` chunks at 20 chunks a second from a paced wire server (in this, the
parent, process): the CPU the agents' process spends per second of streaming (1.0 is
one core), the chunks it logs per second, and the delay of a chunk from the wire to
the session log while every stream is open (until the first stream ends; apart, the
worst one while the turns end, and the worst one including the start, when all the
requests go out at once). A bare aiohttp client reading the same
streams (no dsh) gives the floor the machine and the wire server set. On a machine of
two cores or more the wire server (this process's event loop) and the agents' process
run on disjoint halves of the cores (:func:`~dshbench.child.split_cores`), so the
server's 20,000 writes a second do not compete with the process measured; the bare
reader gets the same split. ``fleet-stream`` runs the streaming rows alone.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

from dsh.testing.wire import Finish, RecordedRequest, Reply, SentAt, Usage, WireServer, text_reply
from dshbench.child import pin, run_child, split_cores
from dshbench.metrics import Metric, Target
from dshbench.plan import Plan

SCENARIO = "fleet"
PACE = 0.05
"""Seconds between two chunks of a stream: 20 chunks a second."""


def _answer(_request: RecordedRequest) -> Reply:
    return text_reply("done", usage=Usage(10, 1))


async def batch_once(plan: Plan, workers: int, scratch: Path) -> tuple[float, float]:
    """One ``dsh batch`` run: (tasks per second once the workers are up, wall seconds of the command)."""
    tasks = scratch / "tasks.jsonl"
    (scratch / "w").mkdir(exist_ok=True)
    tasks.write_text(
        "".join(json.dumps({"prompt": f"task {n}", "workspace": "w"}) + "\n" for n in range(plan.batch_tasks))
    )
    async with WireServer(respond=_answer) as server:
        env = {**os.environ, "DEEPSEEK_API_KEY": "bench-key", "DEEPSEEK_BASE_URL": server.base_url}
        env.update(RAY_AUTH_MODE="disabled", DSH_HOME=str(scratch / "home"))
        started = time.perf_counter()
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "dsh.cli",
            "batch",
            str(tasks),
            "--out",
            str(scratch / "out.jsonl"),
            "--workers",
            str(workers),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            cwd=scratch,
        )
        assert process.stderr is not None
        up = 0
        ready = started
        tail: list[str] = []
        while line := (await process.stderr.readline()).decode():
            tail = [*tail[-20:], line]
            if re.search(r"^dsh: worker \d+: pid", line):
                up += 1
                if up == workers:
                    ready = time.perf_counter()
        status = await process.wait()
        ended = time.perf_counter()
    if status != 0 or up < workers:
        raise RuntimeError(f"dsh batch --workers {workers} failed (exit {status}):\n" + "".join(tail))
    return plan.batch_tasks / (ended - ready), ended - started


async def run(plan: Plan) -> list[Metric]:
    """Every fleet row: the batch rows, then the streaming ones."""
    return [*await run_batch(plan), *await run_streaming(plan)]


async def run_batch(plan: Plan) -> list[Metric]:
    """The ``dsh batch`` rows."""
    metrics: list[Metric] = []
    for workers in (1, 2):
        rate = Metric(
            SCENARIO, f"dsh batch, {workers} local Ray worker(s), {plan.batch_tasks} one-step tasks", "tasks/s"
        )
        wall = Metric(SCENARIO, f"dsh batch, {workers} local Ray worker(s), whole command incl. cluster start", "s")
        for _ in range(max(1, plan.runs // 3)):
            with tempfile.TemporaryDirectory(prefix="dsh-bench-") as scratch:
                per_second, seconds = await batch_once(plan, workers, Path(scratch))
            rate.samples.append(per_second)
            wall.samples.append(seconds)
        metrics += [rate, wall]
    return metrics


async def run_streaming(plan: Plan) -> list[Metric]:
    """The rows of ``stream_agents`` agents streaming at once from a paced wire server."""
    agents = plan.stream_agents
    cpu = Metric(
        SCENARIO, f"{agents:,} agents streaming at once (20 chunks/s each), CPU per second", "cores", target=Target(1.0)
    )
    rate = Metric(SCENARIO, f"{agents:,} agents streaming at once, chunks logged per second", "chunks/s")
    worst = Metric(
        SCENARIO, f"{agents:,} agents streaming, worst chunk delay wire to log, all open", "ms", target=Target(100)
    )
    p99 = Metric(SCENARIO, f"{agents:,} agents streaming, p99 chunk delay wire to log, all open", "ms")
    steady = Metric(SCENARIO, f"{agents:,} agents streaming, CPU per second while all are open", "cores")
    per_chunk = Metric(SCENARIO, f"{agents:,} agents streaming, CPU per chunk while all are open", "µs")
    ending = Metric(SCENARIO, f"{agents:,} agents streaming, worst chunk delay while turns end", "ms")
    start = Metric(SCENARIO, f"{agents:,} agents streaming, worst chunk delay incl. the start of all", "ms")
    bare = Metric(SCENARIO, f"{agents:,} bare aiohttp readers of the same streams (no dsh), worst delay", "ms")
    bare_cpu = Metric(SCENARIO, f"{agents:,} bare aiohttp readers, CPU per chunk (start included)", "µs")
    reply = Reply([*(SentAt() for _ in range(plan.stream_chunks)), Finish("stop", Usage(10, plan.stream_chunks))])
    cores = split_cores()
    server_cpus, client_cpus = cores if cores is not None else (None, None)
    job = {"agents": agents, "cpus": sorted(client_cpus) if client_cpus is not None else None}
    for _ in range(max(1, plan.runs // 3)):
        with pin(server_cpus):
            async with WireServer([reply], repeat=True, pace=PACE) as server:
                result = await run_child({**job, "kind": "streaming", "baseUrl": server.base_url})
        if result["chunks"] != agents * plan.stream_chunks:
            raise RuntimeError(f"expected {agents * plan.stream_chunks} chunks in the logs, got {result['chunks']}")
        cpu.samples.append(result["cpu"] / result["wall"])
        rate.samples.append(result["chunks"] / result["wall"])
        worst.samples.append(result["steadyWorstDelayMs"])
        p99.samples.append(result["steadyP99DelayMs"])
        steady.samples.append(result["steadyCores"])
        per_chunk.samples.append(result["steadyCpuPerChunkUs"])
        ending.samples.append(result["endingWorstDelayMs"])
        start.samples.append(result["worstDelayMs"])
        with pin(server_cpus):
            async with WireServer([reply], repeat=True, pace=PACE) as server:
                floor = await run_child({**job, "kind": "streaming-bare", "baseUrl": server.base_url})
        bare.samples.append(floor["worstDelayMs"])
        bare_cpu.samples.append(floor["cpu"] / floor["chunks"] * 1e6)
    return [cpu, rate, worst, p99, steady, per_chunk, ending, start, bare, bare_cpu]
