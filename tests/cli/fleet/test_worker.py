"""The fleet worker in this process (no Ray): jobs as agents of one booted tree, resumed after a death."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from msgspec import UNSET

from dsh.cli.fleet import worker as worker_module
from dsh.cli.fleet.tasks import BatchTask
from dsh.cli.fleet.worker import CONTINUE_PROMPT, FleetWorker, Job
from dsh.cli.profile import resolve_tree
from dsh.cli.settings import Settings
from dsh.core.session import Session
from dsh.plugins import gc_tuning
from dsh.testing.wire import WireServer
from tests.cli.fleet.conftest import respond, started
from tests.cli.helpers import log_of, namespace


@pytest.fixture
async def server(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[WireServer]:
    async with WireServer(respond=respond) as wire:
        monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")  # restored at teardown, whatever the worker sets
        monkeypatch.setenv("DEEPSEEK_BASE_URL", wire.base_url)
        yield wire


def new_worker(root: Path, server: WireServer, **options: float) -> FleetWorker:
    settings = Settings.from_args(namespace(sessions_root=str(root)))
    environ = {"DEEPSEEK_API_KEY": "sk-test", "DEEPSEEK_BASE_URL": server.base_url}
    tree = resolve_tree(settings)
    return FleetWorker(tree, environ, **options)


def task(workspace: Path, name: str = "one", **fields: object) -> BatchTask:
    workspace.mkdir(exist_ok=True)
    return BatchTask(id=name, prompt=f"task {name}", workspace=str(workspace), **fields)  # type: ignore[arg-type]


async def test_runs_jobs_as_agents_and_reports_usage_and_the_end(tmp_path: Path, server: WireServer) -> None:
    """a job runs its turn (bash, then the answer) in its workspace; the result carries usage, cost and attempts"""
    root = tmp_path / "sessions"
    worker = new_worker(root, server)
    try:
        info = await worker.info()
        result = await worker.run(Job(task=task(tmp_path / "w", max_turns=1), session_id="s-1"))
        assert gc.get_threshold() == gc_tuning.DEFAULT_THRESHOLDS  # a worker hosts many agents: gc-tuning
        assert gc.get_freeze_count() > 0
    finally:
        await worker.close()
    assert not gc_tuning.TUNINGS.active
    assert info.pid > 0
    assert (result.id, result.session_id, result.end_reason, result.attempts) == ("one", "s-1", "completed", 1)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (30, 7)
    assert result.cost
    assert (tmp_path / "w" / "ran.txt").read_text() == "ran\n"
    header, _ = log_of(root, "s-1")
    assert header["cwd"] == str(tmp_path / "w")


async def test_resumes_a_job_its_worker_died_in_without_running_its_tool_again(
    tmp_path: Path, server: WireServer
) -> None:
    """the log cut after the tool result (the worker died there): the resume closes the turn and goes on"""
    root = tmp_path / "sessions"
    first = new_worker(root, server)
    job = Job(task=task(tmp_path / "w"), session_id="s-2")
    try:
        await first.run(job)
    finally:
        await first.close()
    (path,) = root.glob("*/s-2.jsonl")
    lines = path.read_text().splitlines()
    cut = next(index for index, line in enumerate(lines) if json.loads(line)["type"] == "tool/result")
    path.write_text("\n".join(lines[: cut + 1]) + "\n")
    second = new_worker(root, server)
    try:
        result = await second.run(Job(task=job.task, session_id="s-2", attempt=2))
    finally:
        await second.close()
    assert (result.end_reason, result.attempts) == ("completed", 2)
    _, events = log_of(root, "s-2")
    ends = [event["data"]["reason"]["kind"] for event in events if event["type"] == "turn/end"]
    assert ends == ["interrupted", "completed"]
    users = [event["data"] for event in events if event["type"] == "user/message"]
    assert users[-1] == {
        "content": [{"type": "text", "text": CONTINUE_PROMPT}],
        "source": {"kind": "plugin", "plugin": "batch"},
    }
    assert [event["type"] for event in events].count("tool/result") == 1
    assert (tmp_path / "w" / "ran.txt").read_text() == "ran\n"  # run once, not again


async def test_a_resumed_job_that_had_finished_is_reported_without_asking_again(
    tmp_path: Path, server: WireServer
) -> None:
    """the worker died after the turn ended but before it answered: the log already says how it ended"""
    root = tmp_path / "sessions"
    worker = new_worker(root, server)
    job = Job(task=task(tmp_path / "w"), session_id="s-3")
    try:
        await worker.run(job)
    finally:
        await worker.close()
    asked = len(server.requests)
    again = new_worker(root, server)
    try:
        result = await again.run(Job(task=job.task, session_id="s-3", attempt=2))
        assert len(server.requests) == asked
        fresh = await again.run(Job(task=task(tmp_path / "v", "two"), session_id="s-4", attempt=2))
    finally:
        await again.close()
    assert result.end_reason == "completed"
    assert fresh.end_reason == "completed"  # never stored: the resume creates it
    assert len(server.requests) == asked + 2


async def test_a_session_another_worker_holds_is_waited_for_then_refused(
    tmp_path: Path, gated_server: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """a session held mid-turn is asked for again after a pause; past lock_wait_s the result names SESSION_LOCKED"""
    root, workspace = tmp_path / "sessions", tmp_path / "w"
    holder = new_worker(root, gated_server)
    job = Job(task=task(workspace), session_id="s-5")
    running = asyncio.ensure_future(holder.run(job))
    refused = new_worker(root, gated_server, lock_wait_s=0)
    waiting = new_worker(root, gated_server, lock_wait_s=60)

    async def let_go() -> None:  # the pause (a clock) ends once the holder's job has ended
        (workspace / "go").touch()
        await asyncio.wait((running,))

    monkeypatch.setattr(worker_module, "pause_for_lock", let_go)
    try:
        await started(workspace)
        locked = await refused.run(Job(task=job.task, session_id="s-5", attempt=2))
        resumed = await waiting.run(Job(task=job.task, session_id="s-5", attempt=2))  # the holder is still open
        first = await running
    finally:
        (workspace / "go").touch()
        await asyncio.wait((running,))
        await holder.close()
        await refused.close()
        await waiting.close()
    assert locked.error
    assert locked.error.startswith("[SESSION_LOCKED]")
    assert (first.end_reason, resumed.end_reason) == ("completed", "completed")
    assert (workspace / "ran.txt").read_text() == "ran\n"  # the resume found the turn ended: nothing ran again


async def test_a_worker_running_many_jobs_in_turn_keeps_no_session_and_no_lock_of_a_finished_one(
    tmp_path: Path, server: WireServer
) -> None:
    """each finished job's session is flushed, forgotten and unlocked: another worker may take it at once"""
    root = tmp_path / "sessions"
    worker = new_worker(root, server)
    other = new_worker(root, server)
    try:
        for n in range(12):
            result = await worker.run(Job(task=task(tmp_path / f"w{n}", f"j{n}"), session_id=f"many-{n}"))
            assert result.end_reason == "completed"
        gc.collect()
        kept = [held.id for held in gc.get_objects() if isinstance(held, Session) and held.id.startswith("many-")]
        assert kept == []
        assert open_lock_files() == []
        again = await other.run(Job(task=task(tmp_path / "w0", "j0"), session_id="many-0", attempt=2))
    finally:
        await worker.close()
        await other.close()
    assert (again.end_reason, again.error) == ("completed", UNSET)


def open_lock_files() -> list[str]:
    """The writer lock files this process has open."""
    paths = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # a descriptor closed while listing
            paths.append(os.readlink(f"/proc/self/fd/{fd}"))
    return [path for path in paths if path.endswith(".lock")]


async def test_the_pause_before_asking_again_is_the_retry_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    """the real pause (not the tests' stand-in) waits LOCK_RETRY_S"""
    monkeypatch.setattr(worker_module, "LOCK_RETRY_S", 0.02)
    loop = asyncio.get_running_loop()
    started = loop.time()
    await worker_module.pause_for_lock()
    assert loop.time() - started >= 0.02
