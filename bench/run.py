"""``make bench``: measure what the dsh harness costs, print one table, save the numbers.

Usage::

    python bench/run.py                 # the full plan (make bench), under 10 minutes on 2 cores
    python bench/run.py --quick         # fewer runs, smaller sizes (make bench-quick), under a minute
    python bench/run.py --only steps chunks --runs 7
    python bench/run.py --profile DIR   # cProfile the representative jobs, print the hot spots

Every scenario drives the real stack against ``dsh.testing.wire`` (a local
chat-completions server that answers at once), so only the harness is measured.
Results go to ``bench/results/<YYYY-MM-DD>.json`` (``-quick`` appended for a quick
run) with the machine they were measured on. Nothing here asserts a timing: targets
are printed beside the medians. See ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from dshbench.child import child_main
from dshbench.hotspots import profile_all
from dshbench.machine import machine_info
from dshbench.metrics import Metric, unavailable
from dshbench.plan import Plan
from dshbench.scenarios import SCENARIOS
from dshbench.table import render_table

RESULTS = Path(__file__).resolve().parent / "results"


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number of runs; give 1 or more")
    return value


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/run.py", description="Measure what the dsh harness costs.")
    parser.add_argument("--quick", action="store_true", help="fewer runs and smaller sizes (about a minute)")
    parser.add_argument("--runs", type=positive, help="samples per row (default: 5, or 3 with --quick)")
    parser.add_argument("--only", nargs="+", choices=list(SCENARIOS), metavar="SCENARIO", help="run only these")
    parser.add_argument("--output", type=Path, help="where to write the JSON (default: bench/results/<date>.json)")
    parser.add_argument("--profile", type=Path, metavar="DIR", help="profile the representative jobs into DIR")
    parser.add_argument("--child", metavar="JOB", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


async def measure(plan: Plan, names: list[str]) -> list[Metric]:
    metrics: list[Metric] = []
    for name in names:
        started = time.perf_counter()
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        try:
            metrics += await SCENARIOS[name](plan)
        except Exception as error:  # one broken scenario must not lose the others' numbers
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            print(f"bench: {name} failed: {error}", file=sys.stderr, flush=True)
            metrics.append(unavailable(name, "scenario failed", "", first))
        print(f"bench: {name} took {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    return metrics


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.child is not None:
        return child_main(args.child)
    plan = (Plan.fast() if args.quick else Plan.full()).with_runs(args.runs)
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
        print(asyncio.run(profile_all(plan, args.profile)))
        return 0
    names = args.only or list(SCENARIOS)
    load_before = os.getloadavg()
    started = time.perf_counter()
    metrics = asyncio.run(measure(plan, names))
    elapsed = time.perf_counter() - started
    load_after = os.getloadavg()
    table = render_table(metrics)
    print(table)
    today = datetime.date.today().isoformat()
    output = args.output or RESULTS / f"{today}{'-quick' if plan.quick else ''}.json"
    report = {
        "date": today,
        "mode": "quick" if plan.quick else "full",
        "runs": plan.runs,
        "seconds": round(elapsed, 1),
        "scenarios": names,
        "machine": machine_info(plan.project, tempfile.gettempdir()),
        "loadAverage1m": {"start": load_before[0], "end": load_after[0]},
        "metrics": [metric.to_json() for metric in metrics],
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(
        f"\nbench: {len(metrics)} rows in {elapsed:.0f} s; 1-minute load average {load_before[0]:.2f} at the start, "
        f"{load_after[0]:.2f} at the end (other work on the machine skews wall times); wrote {output}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
