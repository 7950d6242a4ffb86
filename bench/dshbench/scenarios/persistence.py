"""Scenario 4, persistence: append throughput with a flush per turn, and load + resume of big logs.

Every backend (JSONL, SQLite, PostgreSQL), each job in a fresh process writing to a
temporary directory (PostgreSQL: a schema of its own in a private cluster that this
scenario starts, as the tests do, and removes at the end). Resume builds one log per size once per job, then times
``agents.resume`` (the backend's load, seeding the live session, adoption by the
write coordinator, and starting the agent) ``runs`` times per size.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from dshbench.child import run_child
from dshbench.jobs import EVENTS_PER_TURN
from dshbench.metrics import Metric, Target
from dshbench.plan import Plan

SCENARIO = "persistence"
BACKENDS = (("jsonl", "JSONL"), ("sqlite", "SQLite"), ("postgres", "PostgreSQL"))
RESUME_TARGET_EVENTS = 100_000
RESUME_TARGET = Target(1000)


@contextmanager
def postgres_server(plan: Plan) -> Iterator[str]:
    """The URL of a private PostgreSQL cluster (the tests' own), stopped and removed afterwards."""
    sys.path.insert(0, str(plan.project))
    from tests.plugins.persistence_postgres.cluster import start_cluster

    cluster = start_cluster()
    try:
        yield cluster.url()
    finally:
        cluster.stop()


async def run(plan: Plan) -> list[Metric]:
    with postgres_server(plan) as pg_url:
        return await _run(plan, pg_url)


async def _run(plan: Plan, pg_url: str) -> list[Metric]:
    metrics: list[Metric] = []
    for backend, label in BACKENDS:
        rate = Metric(SCENARIO, f"append, flush per turn of {EVENTS_PER_TURN} events ({label})", "events/s")
        for _ in range(plan.runs):
            job = {"kind": "append-rate", "backend": backend, "turns": plan.append_turns, "pgUrl": pg_url}
            result = await run_child(job)
            rate.samples.append(result["events"] / result["wall"])
        metrics.append(rate)
    for backend, label in BACKENDS:
        job = {
            "kind": "resume",
            "backend": backend,
            "sizes": list(plan.resume_sizes),
            "repeats": plan.runs,
            "pgUrl": pg_url,
        }
        result = await run_child(job, timeout=600)
        for size in plan.resume_sizes:
            target = RESUME_TARGET if size == RESUME_TARGET_EVENTS else None
            walls = [wall * 1000 for wall in result["sizes"][str(size)]["wall"]]
            events = result["events"][str(size)]
            metrics.append(Metric(SCENARIO, f"load + resume, {events:,} events ({label})", "ms", walls, target))
    return metrics
