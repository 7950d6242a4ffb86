"""Fleet workers sharing a PostgreSQL store: a session's lease decides which worker may resume it."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import pytest

from dsh.cli.fleet import worker as worker_module
from dsh.cli.fleet.tasks import BatchTask
from dsh.cli.fleet.worker import FleetWorker, Job
from dsh.cli.profile import resolve_tree
from dsh.cli.settings import Settings
from dsh.testing.wire import WireServer
from tests.cli.fleet.conftest import started
from tests.cli.helpers import namespace
from tests.plugins.persistence_postgres.cluster import Cluster
from tests.plugins.persistence_postgres.conftest import cluster  # noqa: F401 - the private PostgreSQL server


def new_worker(url: str, server: WireServer, lock_wait_s: float) -> FleetWorker:
    tree = resolve_tree(Settings.from_args(namespace(store=url)))
    environ = {"DEEPSEEK_API_KEY": "sk-test", "DEEPSEEK_BASE_URL": server.base_url}
    return FleetWorker(tree, environ, lock_wait_s=lock_wait_s)


async def test_a_leased_session_is_refused_then_resumed_once_its_holders_job_ends(
    cluster: Cluster,  # noqa: F811 - the fixture imported above
    gated_server: WireServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """the worker running a session keeps others out (SESSION_LOCKED); once its job ends (the worker still
    open) its lease is gone and another worker resumes the session without waiting for the lease's expiry"""
    url = cluster.url()
    session_id = f"pg-{uuid.uuid4()}"
    job = Job(task=BatchTask(id="t", prompt="task pg", workspace=str(tmp_path)), session_id=session_id)
    holder = new_worker(url, gated_server, 0)
    refused = new_worker(url, gated_server, 0)
    waiting = new_worker(url, gated_server, 60)
    running = asyncio.ensure_future(holder.run(job))

    async def let_go() -> None:  # the pause (a clock) ends once the holder's job has ended
        (tmp_path / "go").touch()
        await asyncio.wait((running,))

    monkeypatch.setattr(worker_module, "pause_for_lock", let_go)
    try:
        await started(tmp_path)
        locked = await refused.run(Job(task=job.task, session_id=session_id, attempt=2))
        resumed = await waiting.run(Job(task=job.task, session_id=session_id, attempt=2))
        asked = len(gated_server.requests)
        first = await running
    finally:
        (tmp_path / "go").touch()
        await asyncio.wait((running,))
        await holder.close()
        await refused.close()
        await waiting.close()
    assert first.end_reason == "completed"
    assert locked.error
    assert locked.error.startswith("[SESSION_LOCKED]")
    assert (resumed.end_reason, resumed.attempts, len(gated_server.requests)) == ("completed", 2, asked)
