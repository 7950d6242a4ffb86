"""``bench/run.py --profile DIR``: run the representative jobs under cProfile and list the hot spots.

Only the measured region of each job is profiled (see :class:`dshbench.probe.Probe`).
For every job, ``DIR/<job>.pstats`` holds the raw statistics (open them with
``python -m pstats``) and ``DIR/<job>.txt`` the top functions by own time and by
cumulative time; the returned text is the own-time top of every job.
"""

from __future__ import annotations

import io
import pstats
import site
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dsh.testing.wire import Entry, long_reply, text_reply
from dshbench.child import run_child, run_served
from dshbench.plan import Plan
from dshbench.scenarios.scale import rotation
from dshbench.scenarios.steps import turn_script

TOP = 30


def _jobs(plan: Plan) -> list[tuple[str, Sequence[Entry] | None, dict[str, Any], bool]]:
    """(name, wire script or None, job, repeat the script)."""
    return [
        ("steps-bash", turn_script(plan.steps, "bash"), {"kind": "turn", "steps": plan.steps}, False),
        ("steps-noop", turn_script(plan.steps, "noop"), {"kind": "turn", "steps": plan.steps}, False),
        (
            "chunks-jsonl-invariants",
            [text_reply("warm"), long_reply(1), long_reply(plan.chunks)],
            {"kind": "chunks", "persistence": "jsonl", "invariants": True},
            False,
        ),
        ("append-jsonl", None, {"kind": "append-rate", "backend": "jsonl", "turns": plan.append_turns}, False),
        (
            "resume-jsonl",
            None,
            {"kind": "resume", "backend": "jsonl", "sizes": [plan.resume_sizes[-1]], "repeats": 1},
            False,
        ),
        ("idle-agents", None, {"kind": "idle-agents", "agents": plan.idle_agents}, False),
        (
            "concurrent",
            rotation(),
            {"kind": "concurrent", "agents": plan.concurrent_agents, "turns": plan.concurrent_turns},
            True,
        ),
    ]


def _shorten(text: str, project: Path) -> str:
    for prefix in site.getsitepackages():
        text = text.replace(prefix + "/", "site-packages/")
    return text.replace(str(project) + "/", "")


def _listing(path: Path, order: str, project: Path) -> str:
    buffer = io.StringIO()
    pstats.Stats(str(path), stream=buffer).sort_stats(order).print_stats(TOP)
    return _shorten(buffer.getvalue(), project)


async def profile_all(plan: Plan, folder: Path) -> str:
    """Profile every representative job into ``folder`` (an existing directory); return the own-time listings."""
    report = []
    for name, script, job, repeat in _jobs(plan):
        stats = folder / f"{name}.pstats"
        profiled = {**job, "profile": str(stats)}
        if script is None:
            await run_child(profiled, timeout=600)
        else:
            await run_served(script, profiled, repeat=repeat)
        own = _listing(stats, "tottime", plan.project)
        cumulative = _listing(stats, "cumulative", plan.project)
        (folder / f"{name}.txt").write_text(f"{own}\n{cumulative}", encoding="utf-8")
        report.append(f"==== {name}\n{own}")
    return "\n".join(report)
