"""The JSONL backend's blocking storage work runs off the event loop and completes as a unit.

Other sessions keep going while one session's fsync blocks, a cancelled hook still finishes
(or rolls back) its batch, and directory entries are fsynced when created, not per file. The
offload itself is covered in ``tests/core/persistence/test_offload.py``.
"""

# Tests inspect small local files synchronously on purpose.

from __future__ import annotations

import asyncio
import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

import dsh.plugins.persistence_jsonl.files as files
import dsh.plugins.persistence_jsonl.plugin as plugin
from dsh.core.persistence import make_private_dirs
from dsh.plugins.persistence_jsonl import bucket_name, log_path
from tests.core.persistence.helpers import CWD, Rig, meta, one_turn_log, one_user_turn, seqs, short_turn
from tests.core.persistence.threads import Gate, wait_in_thread
from tests.kernel.helpers import ticks
from tests.plugins.persistence_jsonl.test_jsonl import expected_bytes


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
    await ticks(20)
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
