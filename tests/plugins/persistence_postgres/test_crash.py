"""Crash safety on PostgreSQL: SIGKILL an agent mid-turn; once its lease expires another process resumes the
session from the same database: nothing committed is lost or rewritten, the interrupted turn is closed, and the
next turn completes (the JSONL crash test's checks, on this backend)."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from dsh.plugins.persistence_postgres import SessionPersistencePostgres
from tests.e2e.test_crash import run_and_kill, verify
from tests.plugins.persistence_postgres.cluster import Cluster
from tests.plugins.persistence_postgres.conftest import raw

RUNS = 6
LEASE_S = 1.0
"""The lease of the killed agent (``crash_agent.py``): its sessions are free at most this long after the kill."""


@pytest.mark.e2e
@pytest.mark.timeout(300)
async def test_sigkill_mid_turn_then_resume_from_the_same_database(cluster: Cluster, tmp_path: Path) -> None:
    rng = random.Random(20261202)
    url = cluster.url()
    interrupted = 0
    for run in range(RUNS):
        session_id = f"crash-{run}"
        checkpoints = await run_and_kill(f"{url}#crash", session_id, rng.uniform(0.05, 0.35))
        await asyncio.sleep(LEASE_S * 1.5)  # the killed writer's lease expires (it renews nothing any more)
        await verify(
            tmp_path, session_id, checkpoints, (SessionPersistencePostgres, {"url": url, "pg_schema": "crash"})
        )
        with raw(url) as db:
            rows = db.execute(
                "SELECT count(*) FROM crash.events WHERE session_id = %s AND data LIKE '%%\"interrupted\"%%'",
                (session_id,),
            ).fetchall()
        interrupted += rows[0][0] > 0
    assert interrupted > 0, "no run was killed inside a turn; the delays miss the streaming window"
