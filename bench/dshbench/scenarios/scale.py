"""Scenario 5, scale: many idle agents in one process, and many agents running turns at once.

Idle: the full stack (invariants, bash tools, JSONL, the DeepSeek adapter) with N
agents created and parked; RSS per agent is the growth of the process's resident set
divided by N (after a full garbage collection). Concurrent: M agents each run turns
at the same time against one wire server that answers, in rotation, two no-op tool
calls and a final answer; the rate is every step of every agent over the wall time.
The same turns without persistence give the CPU a step costs when no session log is
written: the difference is what the JSONL log (its files, fsyncs and worker threads)
adds to each step.
"""

from __future__ import annotations

import json

from dsh.testing.wire import Finish, Reply, text_reply, tool_call
from dshbench.child import run_child, run_served
from dshbench.metrics import Metric, Target
from dshbench.plan import Plan
from dshbench.stack import NOOP_TOOL

SCENARIO = "scale"
IDLE_TOTAL_TARGET = Target(150)


def rotation() -> list[Reply]:
    call = json.dumps({})
    return [
        Reply([*tool_call(0, "call-a", NOOP_TOOL, call), Finish("tool_calls")]),
        Reply([*tool_call(0, "call-b", NOOP_TOOL, call), Finish("tool_calls")]),
        text_reply("Finished."),
    ]


async def run(plan: Plan) -> list[Metric]:
    count = plan.idle_agents
    per_agent = Metric(SCENARIO, f"{count:,} idle agents, RSS per agent", "KB")
    total = Metric(SCENARIO, f"{count:,} idle agents, process RSS total", "MB", target=IDLE_TOTAL_TARGET)
    for _ in range(plan.runs):
        result = await run_child({"kind": "idle-agents", "agents": count})
        per_agent.samples.append((result["rssAfterKB"] - result["rssBeforeKB"]) / count)
        total.samples.append(result["rssAfterKB"] / 1024)
    agents = plan.concurrent_agents
    rate = Metric(SCENARIO, f"{agents} agents running turns at once, total", "steps/s")
    cpu = Metric(SCENARIO, f"{agents} agents running turns at once, CPU per step", "ms")
    unlogged = Metric(SCENARIO, f"{agents} agents running turns at once, CPU per step, no persistence", "ms")
    job = {"kind": "concurrent", "agents": agents, "turns": plan.concurrent_turns}
    for _ in range(plan.runs):
        logged = await run_served(rotation(), {**job, "persistence": "jsonl"}, repeat=True)
        rate.samples.append(logged["steps"] / logged["wall"])
        cpu.samples.append(logged["cpu"] / logged["steps"] * 1000)
        bare = await run_served(rotation(), {**job, "persistence": "none"}, repeat=True)
        unlogged.samples.append(bare["cpu"] / bare["steps"] * 1000)
    return [per_agent, total, rate, cpu, unlogged]
