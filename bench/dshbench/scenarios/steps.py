"""Scenario 2, per-step overhead: one turn of 1 step vs. one turn of N steps, each in a fresh process.

The long turn is N-1 tool-call steps and a final answer, through the DeepSeek
adapter over HTTP with JSONL persistence and the example stack (invariants, bash
tools). Per tool-call step = (t_N - t_1) / (N - 1), in process CPU and in wall time,
once with a real ``bash`` call of ``true`` per step, once with an in-process
no-op tool, and once with a ``read`` and an ``edit`` of one file per step (the file
tools on the local filesystem; issue 16 asks that this cost no more than ``bash true``),
and once more with the no-op tool and the step policies loaded but idle: ``llm-retry``
(loaded in every row), ``compaction`` (the window is never reached) and the loop's
parallel tool-call pool (one call per step); issue 18 asks that this stay within 5% of
the no-op row.
Both turns of a pair run in the same round, so drift hits both alike.
"""

from __future__ import annotations

import json
import math

from dsh.testing.wire import Finish, Reply, text_reply, tool_call
from dshbench.child import run_served
from dshbench.jobs.turns import FS_FILE
from dshbench.metrics import Metric, Target
from dshbench.plan import Plan
from dshbench.stack import NOOP_TOOL

SCENARIO = "per step"

TOOLS = {
    "bash": ("bash", json.dumps({"command": "true", "description": "do nothing, successfully"})),
    "noop": (NOOP_TOOL, "{}"),
    "idle": (NOOP_TOOL, "{}"),
}
CPU_TARGETS = {"bash": Target(4), "noop": Target(1), "fs": Target(4), "idle": Target(1)}
LABELS = {
    "bash": "real bash `true`",
    "noop": "no-op tool",
    "fs": "`read` + `edit` of one file",
    "idle": "no-op tool, retry + compaction + parallel loaded, idle",
}
RSS_TARGET = Target(80)
TOOLS_IN_ORDER = ("bash", "noop", "idle", "fs")


def _fs_step(n: int) -> Reply:
    """Step ``n`` of the file-tools turn: read line ``n`` of the file, then replace that line.

    Reading one line keeps the history as small as the bash rows' (a whole-file read
    would grow every later request by the file, which measures the adapter, not the tools).
    """
    read = json.dumps({"file_path": FS_FILE, "offset": n, "limit": 1})
    edit = json.dumps({"file_path": FS_FILE, "old_string": f"<{n}>\n", "new_string": f"[{n}]\n"})
    return Reply(
        [*tool_call(0, f"read-{n}", "read", read), *tool_call(1, f"edit-{n}", "edit", edit), Finish("tool_calls")]
    )


def turn_script(steps: int, tool: str) -> list[Reply]:
    """``steps - 1`` replies calling ``tool`` (distinct call ids), then a final answer.

    ``tool="fs"``: each reply calls ``read`` and then ``edit`` on the workspace's file.
    """
    if tool == "fs":
        return [*(_fs_step(n) for n in range(1, steps)), text_reply("All done.")]
    name, arguments = TOOLS[tool]
    calls = [Reply([*tool_call(0, f"call-{n}", name, arguments), Finish("tool_calls")]) for n in range(1, steps)]
    return [*calls, text_reply("All done.")]


async def _turn(steps: int, tool: str) -> dict[str, float]:
    job: dict[str, object] = {"kind": "turn", "steps": steps}
    if tool == "fs":
        job["fs"] = True
    if tool == "idle":
        job["compaction"] = True
    return await run_served(turn_script(steps, tool), job)


async def run(plan: Plan) -> list[Metric]:
    """Every row's pair of turns once per round, the rows in turn, so drift over a round hits all rows alike."""
    extra = plan.steps - 1
    rows: dict[str, tuple[Metric, Metric, Metric, Metric, Metric]] = {}
    for tool in TOOLS_IN_ORDER:
        label = LABELS[tool]
        rows[tool] = (
            Metric(SCENARIO, f"per tool-call step, {label} (CPU)", "ms", target=CPU_TARGETS[tool]),
            Metric(SCENARIO, f"per tool-call step, {label} (wall)", "ms"),
            Metric(SCENARIO, f"per tool-call step, {label} (CPU with its child processes)", "ms"),
            Metric(SCENARIO, f"peak RSS, 1-step turn ({tool})", "MB"),
            Metric(SCENARIO, f"peak RSS, {plan.steps}-step turn ({tool})", "MB", target=RSS_TARGET),
        )
    for _ in range(plan.runs):
        for tool in TOOLS_IN_ORDER:
            cpu, wall, total, rss_short, rss_long = rows[tool]
            short = await _turn(1, tool)
            long = await _turn(plan.steps, tool)
            cpu.samples.append((long["cpu"] - short["cpu"]) / extra * 1000)
            wall.samples.append((long["wall"] - short["wall"]) / extra * 1000)
            spent = long["cpu"] + long["children"] - short["cpu"] - short["children"]
            total.samples.append(spent / extra * 1000)
            rss_short.samples.append(short["peakRssKB"] / 1024)
            rss_long.samples.append(long["peakRssKB"] / 1024)
    return [metric for tool in TOOLS_IN_ORDER for metric in rows[tool]] + _fs_against_bash(rows["fs"], rows["bash"])


def _fs_against_bash(fs: tuple[Metric, ...], bash: tuple[Metric, ...]) -> list[Metric]:
    """Issue 16's budget, round by round: a ``read`` + ``edit`` step's CPU over a bash ``true`` step's.

    The budgeted row counts what each step costs the machine: the bash step's CPU
    includes the ``bash`` process it starts (the file tools start none). The row of
    the harness's own CPU alone, without the child, is printed beside it.
    """
    label = "`read` + `edit` step / bash `true` step"
    machine = Metric(SCENARIO, f"{label}, CPU with child processes", "x", target=Target(1))
    own = Metric(SCENARIO, f"{label}, the harness's own CPU", "x")
    machine.samples += [_ratio(f, b) for f, b in zip(fs[2].samples, bash[2].samples, strict=True)]
    own.samples += [_ratio(f, b) for f, b in zip(fs[0].samples, bash[0].samples, strict=True)]
    return [machine, own]


def _ratio(part: float, whole: float) -> float:
    """``part / whole``; infinite when ``whole`` is not positive (a round too noisy to measure fails the budget)."""
    return part / whole if whole > 0 else math.inf
