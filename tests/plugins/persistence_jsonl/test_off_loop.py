"""Blocking storage work runs off the event loop (run_blocking) and completes as a unit.

Covers :func:`dsh.core.persistence.run_blocking` and how the JSONL backend uses it: other
sessions keep going while one session's fsync blocks, a cancelled hook still finishes (or
rolls back) its batch, and directory entries are fsynced when created, not per file.
"""

# Tests inspect small local files synchronously on purpose.

from __future__ import annotations

import asyncio
import errno
import gc
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import dsh.plugins.persistence_jsonl.files as files
import dsh.plugins.persistence_jsonl.plugin as plugin
from dsh.core.persistence import make_private_dirs, run_blocking
from dsh.plugins.persistence_jsonl import bucket_name, log_path
from tests.core.persistence.helpers import CWD, Rig, meta, one_turn_log, one_user_turn, seqs, short_turn
from tests.plugins.persistence_jsonl.test_jsonl import expected_bytes

WAIT = 30.0
"""Upper bound for a thread to wait on an event the test sets (a hang fails instead of blocking)."""


async def wait_in_thread(flag: threading.Event) -> None:
    """Await a threading.Event without blocking the event loop."""
    assert await asyncio.get_running_loop().run_in_executor(None, flag.wait, WAIT)


async def ticks(count: int = 20) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


class Gate:
    """A blocking point for worker threads: ``entered`` is set when a thread arrives, which
    then waits for ``release``."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def pass_through(self) -> None:
        self.entered.set()
        assert self.release.wait(WAIT)


def block_first_fsync(monkeypatch: pytest.MonkeyPatch, gate: Gate, fail: bool = False) -> list[int]:
    """Make the next ``os.fsync`` wait at ``gate`` (then fail with ENOSPC if ``fail``); later calls pass."""
    real: Callable[[int], None] = os.fsync
    calls: list[int] = []

    def fsync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 1:
            gate.pass_through()
            if fail:
                raise OSError(errno.ENOSPC, "disk full")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


# ------------------------------------------------------------------ run_blocking
async def test_run_blocking_returns_the_result_computed_on_another_thread() -> None:
    """(the work runs in the executor; its value comes back)"""
    caller = threading.get_ident()
    assert await run_blocking(None, threading.get_ident) != caller
    with ThreadPoolExecutor(max_workers=1) as executor:
        assert await run_blocking(executor, lambda: 6 * 7) == 42


async def test_run_blocking_raises_the_exception_of_the_work() -> None:
    """(failures are raised as the work raised them)"""

    def fail() -> None:
        raise OSError(errno.EIO, "device gone")

    with pytest.raises(OSError, match="device gone"):
        await run_blocking(None, fail)


async def test_a_cancelled_caller_waits_for_the_running_work_to_finish() -> None:
    """(cancellation never abandons work already handed to a thread, even when repeated)"""
    gate = Gate()
    done: list[str] = []

    def work() -> str:
        gate.pass_through()
        done.append("finished")
        return "result"

    task = asyncio.ensure_future(run_blocking(None, work))
    await wait_in_thread(gate.entered)
    task.cancel()
    await ticks()
    assert not task.done()
    task.cancel()
    await ticks()
    assert not task.done()
    gate.release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert done == ["finished"]


async def test_work_still_queued_when_its_caller_is_cancelled_still_runs() -> None:
    """(handed over means it will run: a single worker busy elsewhere runs it afterwards)"""
    gate = Gate()
    ran: list[str] = []
    with ThreadPoolExecutor(max_workers=1) as executor:
        busy = asyncio.ensure_future(run_blocking(executor, gate.pass_through))
        await wait_in_thread(gate.entered)
        queued = asyncio.ensure_future(run_blocking(executor, lambda: ran.append("queued")))
        await ticks()
        queued.cancel()
        await ticks()
        assert not queued.done()
        gate.release.set()
        with pytest.raises(asyncio.CancelledError):
            await queued
        await busy
    assert ran == ["queued"]


async def test_the_outcome_of_work_whose_caller_was_cancelled_is_dropped_quietly() -> None:
    """(a failure after cancellation is not raised and not reported as never retrieved)"""
    gate = Gate()
    reported: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))

    def fail() -> None:
        gate.pass_through()
        raise OSError(errno.ENOSPC, "disk full")

    try:
        task = asyncio.ensure_future(run_blocking(None, fail))
        await wait_in_thread(gate.entered)
        task.cancel()
        await ticks()
        gate.release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        del task
        gc.collect()
    finally:
        loop.set_exception_handler(None)
    assert reported == []


async def test_work_its_executor_cancels_before_it_starts_raises_cancelled_error() -> None:
    """(an executor shut down with cancel_futures drops queued work: nothing ran, the caller is cancelled)"""
    gate = Gate()
    ran: list[str] = []
    executor = ThreadPoolExecutor(max_workers=1)
    busy = asyncio.ensure_future(run_blocking(executor, gate.pass_through))
    await wait_in_thread(gate.entered)
    queued = asyncio.ensure_future(run_blocking(executor, lambda: ran.append("queued")))
    await ticks()
    executor.shutdown(wait=False, cancel_futures=True)
    with pytest.raises(asyncio.CancelledError):
        await queued
    gate.release.set()
    await busy
    executor.shutdown()
    assert ran == []


# ------------------------------------------------------------------ the JSONL backend
async def test_other_sessions_keep_writing_while_one_sessions_fsync_blocks(
    rig: Rig, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(hooks run off the event loop: a stalled disk write holds up only its own session)"""
    persistence = await rig.mount()
    await persistence.create(meta("slow", CWD))
    await persistence.create(meta("fast", "/other"))
    gate = Gate()
    block_first_fsync(monkeypatch, gate)
    slow = asyncio.ensure_future(persistence.append("slow", one_turn_log()))
    await wait_in_thread(gate.entered)
    await persistence.append("fast", one_turn_log())
    assert Path(log_path(str(root), "/other", "fast")).read_bytes() == expected_bytes(
        meta("fast", "/other"), one_turn_log()
    )
    assert not slow.done()
    gate.release.set()
    await slow
    fresh = await rig.remount()
    assert seqs((await fresh.load("slow")).events) == list(range(6))


@pytest.mark.parametrize("fail", [False, True], ids=["write-succeeds", "fsync-fails"])
async def test_a_cancelled_append_hook_finishes_its_batch_or_rolls_it_back(
    rig: Rig, root: Path, monkeypatch: pytest.MonkeyPatch, fail: bool
) -> None:
    """(cancellation during write + fsync never leaves a half-written batch)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_turn_log())
    path = Path(log_path(str(root), CWD, "s1"))
    committed = path.read_bytes()
    gate = Gate()
    block_first_fsync(monkeypatch, gate, fail=fail)
    hook = asyncio.ensure_future(rig.backend.append_batch(meta("s1", CWD), short_turn(2, 6), True))
    await wait_in_thread(gate.entered)
    hook.cancel()
    await ticks()
    assert not hook.done()
    gate.release.set()
    with pytest.raises(asyncio.CancelledError):
        await hook
    if fail:
        assert path.read_bytes() == committed
    else:
        assert path.read_bytes() == expected_bytes(meta("s1", CWD), [*one_turn_log(), *short_turn(2, 6)])


async def test_directory_entries_are_fsynced_when_created_and_once_per_instance_not_per_file(
    rig: Rig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(materializing a log fsyncs its file and bucket; the root and buckets only when new or first seen)"""
    synced: list[str] = []
    real = files.fsync_dir

    def record(path: str) -> None:
        synced.append(os.path.relpath(path, tmp_path))
        real(path)

    monkeypatch.setattr(files, "fsync_dir", record)
    monkeypatch.setattr(plugin, "fsync_dir", record)
    root = tmp_path / "a" / "sessions"
    rig.kit.config = {"root": str(root)}
    persistence = await rig.mount()
    bucket = os.path.join("a", "sessions", bucket_name(CWD))

    async def materialize(id: str, cwd: str | None = CWD) -> list[str]:
        synced.clear()
        await persistence.create(meta(id, cwd))
        await persistence.append(id, one_user_turn())
        return synced[:]

    assert sorted(set(await materialize("s1"))) == sorted([".", "a", "a/sessions", bucket])
    assert await materialize("s2") == [bucket]
    assert sorted(await materialize("s3", None)) == sorted(["a", "a/sessions", "a/sessions/_no-cwd"])
    persistence = await rig.remount()
    assert sorted(await materialize("s4")) == sorted(["a", "a/sessions", bucket])
    assert await materialize("s5") == [bucket]
    synced.clear()
    await persistence.append("s5", short_turn(2, 3))
    assert synced == []


def test_make_private_dirs_reports_the_directories_it_created(tmp_path: Path) -> None:
    """(outermost first; existing directories are left alone and not reported)"""
    deep = tmp_path / "x" / "y" / "z"
    assert make_private_dirs(str(deep)) == [str(tmp_path / "x"), str(tmp_path / "x" / "y"), str(deep)]
    assert make_private_dirs(str(deep)) == []
    assert make_private_dirs(str(deep / "w")) == [str(deep / "w")]
