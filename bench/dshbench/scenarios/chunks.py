"""Scenario 3, per-chunk overhead: one step streaming N text chunks, in CPU microseconds per chunk.

Each run is a fresh process with three one-step turns: a warm-up, an answer of one
chunk and an answer of N chunks; per chunk = (t_N - t_1) / (N - 1). Variants: JSONL
persistence on or off, and the invariants plugin on or off.
"""

from __future__ import annotations

from dsh.testing.wire import long_reply, text_reply
from dshbench.child import run_served
from dshbench.metrics import Metric, Target
from dshbench.plan import Plan

SCENARIO = "per chunk"
TARGET = Target(20)

VARIANTS = (
    ("jsonl", True, "JSONL + invariants"),
    ("jsonl", False, "JSONL, no invariants"),
    ("none", True, "no persistence + invariants"),
    ("none", False, "no persistence, no invariants"),
)


async def run(plan: Plan) -> list[Metric]:
    metrics: list[Metric] = []
    extra = plan.chunks - 1
    script = [text_reply("warm"), long_reply(1), long_reply(plan.chunks)]
    for persistence, invariants, label in VARIANTS:
        target = TARGET if persistence == "jsonl" else None
        cpu = Metric(SCENARIO, f"per streamed chunk, {label} (CPU)", "µs", target=target)
        wall = Metric(SCENARIO, f"per streamed chunk, {label} (wall)", "µs")
        for _ in range(plan.runs):
            job = {"kind": "chunks", "persistence": persistence, "invariants": invariants}
            result = await run_served(script, job)
            short, long = result["short"], result["long"]
            cpu.samples.append((long["cpu"] - short["cpu"]) / extra * 1e6)
            wall.samples.append((long["wall"] - short["wall"]) / extra * 1e6)
        metrics += [cpu, wall] if persistence == "jsonl" and invariants else [cpu]
    return metrics
