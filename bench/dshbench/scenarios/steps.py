"""Scenario 2, per-step overhead: one turn of 1 step vs. one turn of N steps, each in a fresh process.

The long turn is N-1 tool-call steps and a final answer, through the DeepSeek
adapter over HTTP with JSONL persistence and the example stack (invariants, bash
tools). Per tool-call step = (t_N - t_1) / (N - 1), in process CPU and in wall time,
once with a real ``bash`` call of ``true`` per step and once with an in-process
no-op tool. Both turns of a pair run in the same round, so drift hits both alike.
"""

from __future__ import annotations

import json

from dsh.testing.wire import Finish, Reply, text_reply, tool_call
from dshbench.child import run_served
from dshbench.metrics import Metric, Target
from dshbench.plan import Plan
from dshbench.stack import NOOP_TOOL

SCENARIO = "per step"

TOOLS = {
    "bash": ("bash", json.dumps({"command": "true", "description": "do nothing, successfully"})),
    "noop": (NOOP_TOOL, "{}"),
}
CPU_TARGETS = {"bash": Target(4), "noop": Target(1)}
LABELS = {"bash": "real bash `true`", "noop": "no-op tool"}
RSS_TARGET = Target(80)


def turn_script(steps: int, tool: str) -> list[Reply]:
    """``steps - 1`` replies calling ``tool`` (distinct call ids), then a final answer."""
    name, arguments = TOOLS[tool]
    calls = [Reply([*tool_call(0, f"call-{n}", name, arguments), Finish("tool_calls")]) for n in range(1, steps)]
    return [*calls, text_reply("All done.")]


async def _turn(steps: int, tool: str) -> dict[str, float]:
    return await run_served(turn_script(steps, tool), {"kind": "turn", "steps": steps})


async def run(plan: Plan) -> list[Metric]:
    metrics: list[Metric] = []
    extra = plan.steps - 1
    for tool in ("bash", "noop"):
        label = LABELS[tool]
        cpu = Metric(SCENARIO, f"per tool-call step, {label} (CPU)", "ms", target=CPU_TARGETS[tool])
        wall = Metric(SCENARIO, f"per tool-call step, {label} (wall)", "ms")
        rss_short = Metric(SCENARIO, f"peak RSS, 1-step turn ({tool})", "MB")
        rss_long = Metric(SCENARIO, f"peak RSS, {plan.steps}-step turn ({tool})", "MB", target=RSS_TARGET)
        for _ in range(plan.runs):
            short = await _turn(1, tool)
            long = await _turn(plan.steps, tool)
            cpu.samples.append((long["cpu"] - short["cpu"]) / extra * 1000)
            wall.samples.append((long["wall"] - short["wall"]) / extra * 1000)
            rss_short.samples.append(short["peakRssKB"] / 1024)
            rss_long.samples.append(long["peakRssKB"] / 1024)
        metrics += [cpu, wall, rss_short, rss_long]
    return metrics
