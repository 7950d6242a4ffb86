"""`session/load` over ACP of a PostgreSQL session another `dsh` process is running (the live tail over NOTIFY)."""

from __future__ import annotations

from pathlib import Path

from tests.acp.follow_scenario import follow_then_take_over
from tests.plugins.persistence_postgres.cluster import Cluster


async def test_a_postgres_session_another_process_runs_is_followed_live_then_taken_over_when_it_ends(
    tmp_path: Path, cluster: Cluster
) -> None:
    await follow_then_take_over(tmp_path, ["--store", cluster.url()])
