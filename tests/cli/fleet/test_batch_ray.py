"""`dsh batch` on a real local Ray cluster: 50 scripted tasks, one worker SIGKILLed mid-run."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from dsh.cli.main import amain
from dsh.testing.wire import WireServer
from tests.cli.fleet.cluster import NO_AUTH, RayCluster
from tests.cli.fleet.conftest import respond
from tests.cli.helpers import log_of

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


class Watched(io.StringIO):
    """A stand-in for stderr that wakes a waiter at every write."""

    def __init__(self) -> None:
        super().__init__()
        self.written = asyncio.Event()

    def write(self, text: str) -> int:
        self.written.set()
        return super().write(text)


async def test_fifty_tasks_finish_when_a_worker_is_killed(
    ray_cluster: RayCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """a SIGKILLed worker's tasks resume on another worker from their logs: 50 results, balanced logs, no re-run"""
    tasks = write_tasks(tmp_path, 50)
    home = tmp_path / "home"
    out = tmp_path / "results.jsonl"
    stderr = Watched()
    async with WireServer(respond=respond) as server:
        for name, value in {"DEEPSEEK_API_KEY": "sk-test", "DEEPSEEK_BASE_URL": server.base_url, **NO_AUTH}.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setattr(sys, "stderr", stderr)
        argv = ["batch", str(tasks), "--out", str(out), "--sessions-root", str(home / "sessions")]
        argv += ["--ray-address", ray_cluster.address, "--workers", "2", "--agents-per-worker", "6"]
        batch = asyncio.ensure_future(amain(argv))
        while len(pids := re.findall(r"worker (\d+): pid (\d+)", stderr.getvalue())) < 2 or not re.search(
            r"batch: \d+/50", stderr.getvalue()
        ):
            assert not batch.done(), stderr.getvalue()
            stderr.written.clear()
            await stderr.written.wait()
        number, pid = pids[0]
        os.kill(int(pid), signal.SIGKILL)
        status = await batch
    said = stderr.getvalue()
    assert status == 0, said
    assert f"worker {number} died; resuming its" in said
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
