"""`dsh batch` end to end: a local cluster of its own, a failing task, and the refusals before Ray starts."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dsh.cli.fleet.scheduler import run_fleet
from dsh.cli.fleet.tasks import BatchTask, TaskResult
from dsh.cli.fleet.worker import FleetWorker, WorkerInfo
from dsh.cli.main import amain
from dsh.testing.wire import WireServer
from tests.cli.fleet.cluster import NO_AUTH, RayCluster
from tests.cli.fleet.conftest import respond


def write_tasks(folder: Path, *tasks: dict[str, object]) -> Path:
    (folder / "w").mkdir(exist_ok=True)
    path = folder / "tasks.jsonl"
    path.write_text("".join(json.dumps({"workspace": "w", **task}) + "\n" for task in tasks))
    return path


@pytest.mark.e2e
@pytest.mark.timeout(180)
async def test_starts_a_local_cluster_and_reports_a_task_that_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """without --ray-address the run has a cluster of its own; a task that fails makes the status 1"""
    tasks = write_tasks(
        tmp_path, {"id": "good", "prompt": "task good"}, {"id": "bad", "prompt": "p", "model": "unserved"}
    )
    out = tmp_path / "results.jsonl"
    async with WireServer(respond=respond) as server:
        for name, value in {"DEEPSEEK_API_KEY": "sk-test", "DEEPSEEK_BASE_URL": server.base_url, **NO_AUTH}.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
        status = await amain(["batch", str(tasks), "--out", str(out), "--workers", "1"])
    stderr = capsys.readouterr().err
    assert status == 1, stderr
    assert "dsh: 1 of 2 task(s) did not complete; see" in stderr
    results = {line["id"]: line for line in map(json.loads, out.read_text().splitlines())}
    assert results["good"]["endReason"] == "completed"
    assert results["bad"]["endReason"] == "error"


async def test_refuses_an_unwritable_results_file_and_a_missing_ray(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """both are said (status 2) before any cluster starts"""
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    tasks = write_tasks(tmp_path, {"prompt": "p"})
    assert await amain(["batch", str(tasks), "--out", str(tmp_path), "--demo"]) == 2
    assert f"cannot write the results file {tmp_path}" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "ray", None)
    assert await amain(["batch", str(tasks), "--out", str(tmp_path / "out.jsonl"), "--demo"]) == 2
    assert "pip install 'dsh[ray]'" in capsys.readouterr().err


@pytest.mark.timeout(180)
async def test_when_every_worker_dies_the_tasks_left_get_an_error(
    ray_cluster: RayCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """workers that die at start are replaced (once each); then every task still queued gets its error"""
    import ray

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    ray.init(address=ray_cluster.address, include_dashboard=False, logging_level="ERROR")
    try:
        actor = ray.remote(FleetWorker).options(num_cpus=0, max_restarts=0)
        with pytest.raises(TypeError, match="missing a required argument"):  # Ray refuses the call: the run ends
            await run_fleet(
                [BatchTask(id="t", prompt="p", workspace=str(tmp_path))],
                new_worker=actor.remote,
                workers=1,
                per_worker=1,
                on_result=print,
                on_worker=print,
                on_death=print,
            )

        def broken() -> object:  # its __init__ fails in the worker: dict(None)
            return actor.remote(None, None)

        seen: list[TaskResult] = []
        deaths: list[tuple[int, int]] = []
        workers: list[WorkerInfo] = []
        tasks = [BatchTask(id=f"t{n}", prompt="p", workspace=str(tmp_path)) for n in range(3)]
        results = await run_fleet(
            tasks,
            new_worker=broken,
            workers=2,
            per_worker=2,
            on_result=seen.append,
            on_worker=lambda _number, info: workers.append(info),
            on_death=lambda number, lost: deaths.append((number, lost)),
        )
    finally:
        ray.shutdown()
    assert results == seen
    assert sorted(result.id for result in results) == ["t0", "t1", "t2"]
    assert {result.error for result in results} == {"no worker left to run it (every worker died)"}
    # two workers and two replacements (worker n's replacement is n + 2; which one dies first varies)
    numbers = sorted(number for number, _lost in deaths)
    assert len(numbers) == 4
    assert len(set(numbers)) == 4
    assert numbers[:2] == [1, 2]
    assert all(number - 2 in numbers for number in numbers[2:])
    assert {lost for _number, lost in deaths} == {0}
    assert workers == []


async def test_a_cluster_address_ray_cannot_use_is_said_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """a bad --ray-address fails the command (status 1) naming it; the store is the one --store names"""
    monkeypatch.setenv("DSH_HOME", str(tmp_path / "home"))
    tasks = write_tasks(tmp_path, {"prompt": "p"})
    argv = ["batch", str(tasks), "--out", str(tmp_path / "out.jsonl"), "--demo", "--ray-address", "nohost:notaport"]
    assert await amain([*argv, "--store", f"sqlite:///{tmp_path / 's.db'}"]) == 1
    err = capsys.readouterr().err
    assert "cannot start the Ray cluster at nohost:notaport: " in err
    assert "check --ray-address" in err
