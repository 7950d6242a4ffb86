"""`dsh batch` on a real local Ray cluster: 50 scripted tasks, one worker SIGKILLed mid-run."""

from __future__ import annotations

import json
import os
import re
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from dsh.testing.wire import WireServer
from tests.cli.fleet.cluster import NO_AUTH, RayCluster
from tests.cli.fleet.conftest import respond
from tests.cli.helpers import child_env, finish, log_of, spawn

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]


def write_tasks(folder: Path, count: int) -> Path:
    lines = []
    for number in range(count):
        workspace = folder / f"w{number}"
        workspace.mkdir()
        lines.append(json.dumps({"id": f"t{number}", "prompt": f"task {number}", "workspace": str(workspace)}))
    path = folder / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def check_log(events: list[dict[str, Any]]) -> Counter[str]:
    """Assert the log is balanced (every turn ended, every call answered once); the completed results per call."""
    starts = [event["data"]["turn"] for event in events if event["type"] == "turn/start"]
    ends = [event["data"]["turn"] for event in events if event["type"] == "turn/end"]
    assert starts == ends
    seqs = [event["seq"] for event in events]
    assert seqs == list(range(len(events)))  # no seq lost, repeated or interleaved
    calls = [
        block["id"]
        for event in events
        if event["type"] == "assistant/message"
        for block in event["data"]["content"]
        if block["type"] == "tool-call"
    ]
    results = Counter(event["data"]["callId"] for event in events if event["type"] == "tool/result")
    assert sorted(results) == sorted(set(calls))
    assert all(count == 1 for count in results.values())
    return Counter(
        event["data"]["callId"]
        for event in events
        if event["type"] == "tool/result" and event["data"].get("error", {}).get("code") != "interrupted"
    )


async def test_fifty_tasks_finish_when_a_worker_is_killed(ray_cluster: RayCluster, tmp_path: Path) -> None:
    """a SIGKILLed worker's tasks resume on another worker from their logs: 50 results, balanced logs, no re-run"""
    tasks = write_tasks(tmp_path, 50)
    home = tmp_path / "home"
    out = tmp_path / "results.jsonl"
    async with WireServer(respond=respond) as server:
        process = await spawn(
            "batch",
            str(tasks),
            "--out",
            str(out),
            "--ray-address",
            ray_cluster.address,
            "--workers",
            "2",
            "--agents-per-worker",
            "6",
            env={**child_env(base_url=server.base_url, home=home), **NO_AUTH},
            cwd=tmp_path,
        )
        assert process.stderr is not None
        seen: list[str] = []
        pids: list[tuple[int, int]] = []
        while len(pids) < 2 or not any(re.search(r"batch: (\d+)/50", line) for line in seen):
            line = (await process.stderr.readline()).decode()
            assert line, "dsh batch ended early:\n" + "".join(seen)
            seen.append(line)
            if found := re.search(r"worker (\d+): pid (\d+)", line):
                pids.append((int(found.group(1)), int(found.group(2))))
        number, pid = pids[0]
        os.kill(pid, signal.SIGKILL)
        done = await finish(process)
    stderr = "".join(seen) + done.stderr
    assert done.status == 0, stderr
    assert f"worker {number} died; resuming its" in stderr
    results = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(result["id"] for result in results) == sorted(f"t{n}" for n in range(50))
    assert {result["endReason"] for result in results} == {"completed"}
    assert any(result["attempts"] == 2 for result in results)
    for result in results:
        _, events = log_of(home / "sessions", result["sessionId"])
        completed = check_log(events)
        ran = tmp_path / f"w{result['id'][1:]}" / "ran.txt"
        runs = ran.read_text().count("ran") if ran.exists() else 0
        assert runs <= 1  # a call is never run twice
        assert sum(completed.values()) <= runs
