"""Bad input and failing storage: each gives a clear error or the documented repair, and no
committed event is lost."""

# Tests inspect small local files synchronously on purpose.

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest

from dsh.core.persistence import SESSION_PERSISTENCE, PersistenceError, WriterLocks
from dsh.core.session import SessionStore, header_line, session_event_line
from dsh.kernel import Context
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl, log_path
from dsh.plugins.persistence_jsonl import plugin as jsonl_plugin
from tests.core.persistence.helpers import (
    CWD,
    Rig,
    meta,
    one_turn_log,
    one_user_turn,
    open_turn,
    seqs,
    short_turn,
    texts,
    types,
)
from tests.plugins.persistence_jsonl.conftest import TORN_FRAGMENT
from tests.plugins.persistence_jsonl.test_jsonl import expected_bytes, write_raw
from tests.sealing import seal, unsealed


def lines_of(*events: Any) -> bytes:
    return b"".join(session_event_line(item).encode() + b"\n" for item in events)


async def test_a_corrupt_header_is_a_clear_error_and_the_file_is_left_alone(rig: Rig, root: Path) -> None:
    """(bad input: corrupt header)"""
    path = Path(log_path(str(root), CWD, "s1"))
    path.parent.mkdir(parents=True)
    damaged = b'{"type":"session","vers\n' + lines_of(*one_turn_log())
    path.write_bytes(damaged)
    persistence = await rig.mount()
    with pytest.raises(PersistenceError, match=r"corrupt session log: header line is not valid JSON") as raised:
        await persistence.load("s1")
    assert raised.value.code == "CORRUPT_LOG"
    with pytest.raises(PersistenceError, match=r"header line is not valid JSON"):
        await persistence.append("s1", short_turn(2, 6))
    assert await persistence.list() == []
    assert path.read_bytes() == damaged


async def test_a_hole_in_the_committed_region_refuses_to_load_and_repairs_nothing(rig: Rig, root: Path) -> None:
    """(bad input: a hole in the committed region)"""
    log = one_turn_log()
    path = write_raw(root, meta("s1", CWD), [])
    damaged = path.read_bytes() + lines_of(*log[:2]) + b"\x00\x00\x00 zeroed block\n" + lines_of(*log[3:])
    path.write_bytes(damaged)
    persistence = await rig.mount()
    where = f"line 4 of {re.escape(str(path))}"  # 1-based, the header being line 1
    with pytest.raises(PersistenceError, match=rf"corrupt session log: unparsable committed event at {where}$"):
        await persistence.load("s1")
    gap = path.read_bytes().replace(b"\x00\x00\x00 zeroed block\n", b"")
    path.write_bytes(gap)
    with pytest.raises(PersistenceError, match=rf"seq gap in committed region at {where} \(expected 2, got 3\)"):
        await persistence.load("s1")
    assert path.read_bytes() == gap
    assert await persistence.list() == [meta("s1", CWD)]


async def test_a_torn_tail_is_cut_and_every_committed_event_is_kept(
    rig: Rig, root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """(bad input: a torn tail; its removal is said once, naming the file)"""
    written = [*one_turn_log(), *short_turn(2, 6)]
    path = write_raw(root, meta("s1", CWD), written, tail=b'{"type":"turn/start","seq":8,"time":0,"da')
    persistence = await rig.mount()
    loaded = await persistence.load("s1")
    assert texts(loaded.events) == texts(written)
    assert path.read_bytes() == unsealed(expected_bytes(meta("s1", CWD), written))  # write_raw seals nothing
    assert texts((await (await rig.remount()).load("s1")).events) == texts(written)
    warned = [record.getMessage() for record in caplog.records if "torn tail" in record.getMessage()]
    size = len(unsealed(expected_bytes(meta("s1", CWD), written)))
    assert warned == [f"{path}: removed a torn tail (an unfinished write) after byte {size}"]


async def test_an_uncommitted_damaged_tail_after_the_last_turn_end_is_cut_and_closed(rig: Rig, root: Path) -> None:
    """(bad input: damaged lines after the last turn/end are a torn tail)"""
    written = [*one_turn_log(), *open_turn(2, 6)]
    path = write_raw(root, meta("s1", CWD), written[:7])
    path.write_bytes(path.read_bytes() + b"garbage line\n" + lines_of(written[7]) + TORN_FRAGMENT)
    loaded = await (await rig.mount()).load("s1")
    assert types(loaded.events) == [*types(written[:7]), "turn/end"]
    assert texts(loaded.events[:7]) == texts(written[:7])
    assert b"garbage" not in path.read_bytes()


async def test_a_wrong_format_version_is_refused_without_touching_the_file(rig: Rig, root: Path) -> None:
    """(bad input: a wrong format version)"""
    path = write_raw(root, meta("s1", CWD, version=3), open_turn(1, 0), tail=TORN_FRAGMENT)
    before = path.read_bytes()
    persistence = await rig.mount()
    with pytest.raises(PersistenceError, match=r'unsupported session format version 3 for "s1" \(only v1'):
        await persistence.load("s1")
    _fiber, session = await rig.live("s1", seed=open_turn(1, 0))
    with pytest.raises(PersistenceError, match=r"unsupported session format version 3"):
        await rig.init(session)
    assert path.read_bytes() == before


def ignores_directory_permissions(tmp_path: Path) -> bool:
    """True when this process can write into a 0500 directory (root with CAP_DAC_OVERRIDE)."""
    probe = tmp_path / "probe"
    probe.mkdir(mode=0o500)
    try:
        (probe / "x").touch()
    except PermissionError:
        return False
    finally:
        probe.chmod(0o700)
    return True


async def test_an_unwritable_root_is_a_clear_error_and_the_buffer_survives(
    rig: Rig, root: Path, tmp_path: Path
) -> None:
    """(bad input: an unwritable root, chmod 0500)"""
    if os.geteuid() == 0 and ignores_directory_permissions(tmp_path):
        pytest.skip("running as root: a 0500 directory stays writable")
    root.mkdir()
    root.chmod(0o500)
    try:
        await rig.mount()
        _fiber, session = await rig.live("s1")
        session.append("user/message", {"content": [], "source": {"kind": "user"}})
        with pytest.raises(PersistenceError, match=r"writable directory") as raised:
            await rig.flush(session)
        assert isinstance(raised.value.__cause__, PermissionError)
        root.chmod(0o700)
        await rig.flush(session)
        assert seqs((await (await rig.remount()).load("s1")).events) == [0]
    finally:
        root.chmod(0o700)


async def test_a_root_below_a_regular_file_is_a_clear_error_and_a_reload_persists_everything(
    rig: Rig, tmp_path: Path
) -> None:
    """(bad input: a root that cannot become a directory; the adoption fails, a reload recovers)"""
    blocker = tmp_path / "blocker"
    blocker.write_text("a file")
    rig.kit.config = {"root": str(blocker / "sessions")}
    await rig.mount()
    _fiber, session = await rig.live("s1")
    session.append("user/message", {"content": [], "source": {"kind": "user"}})
    with pytest.raises(PersistenceError, match=r'session "s1" .*Not a directory') as raised:
        await rig.flush(session)
    assert raised.value.code == "STORAGE_IO"
    assert isinstance(raised.value.__cause__, NotADirectoryError)
    blocker.unlink()
    await rig.remount()
    await rig.init(session)
    session.append("user/message", {"content": [], "source": {"kind": "user"}})
    await rig.flush(session)
    assert seqs((await (await rig.remount()).load("s1")).events) == [0, 1]


async def test_a_partial_write_then_enospc_is_truncated_back_and_retried_without_a_gap(
    rig: Rig, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(failing write: a short write followed by ENOSPC leaves no partial line behind)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_turn_log())
    path = Path(log_path(str(root), CWD, "s1"))
    committed = path.read_bytes()
    real_write = os.write
    calls: list[int] = []

    def short_then_full(fd: int, data: Any) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", short_then_full)
    with pytest.raises(PersistenceError, match=r"No space left on device"):
        await persistence.append("s1", short_turn(2, 6))
    assert len(calls) == 2
    assert path.read_bytes() == committed
    monkeypatch.setattr(os, "write", real_write)
    await persistence.append("s1", short_turn(2, 6))
    assert seqs((await (await rig.remount()).load("s1")).events) == list(range(8))


async def test_a_failed_rollback_is_noted_on_the_error(rig: Rig, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """(failing write: when the truncate-back fails too, the error says so)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_user_turn())

    def no_space(*_args: Any) -> Any:
        raise OSError(errno.ENOSPC, "disk full")

    def no_truncate(*_args: Any) -> Any:
        raise OSError(errno.EIO, "device gone")

    monkeypatch.setattr(os, "fsync", no_space)
    monkeypatch.setattr(os, "ftruncate", no_truncate)
    with pytest.raises(PersistenceError, match=r"disk full") as raised:
        await persistence.append("s1", short_turn(2, 3))
    cause = raised.value.__cause__
    assert cause is not None
    assert any("truncating" in note and "device gone" in note for note in cause.__notes__)


async def test_a_failed_first_write_leaves_neither_a_log_nor_a_temp_file(
    rig: Rig, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(failing write during materialization: nothing half-written appears)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))

    def no_space(*_args: Any) -> Any:
        raise OSError(errno.ENOSPC, "disk full")

    monkeypatch.setattr(os, "write", no_space)
    with pytest.raises(PersistenceError, match=r"disk full"):
        await persistence.append("s1", one_user_turn())
    bucket = Path(log_path(str(root), CWD, "s1")).parent
    assert list(bucket.iterdir()) == []
    monkeypatch.undo()
    await persistence.append("s1", one_user_turn())
    assert [path.name for path in bucket.iterdir()] == ["s1.jsonl"]


async def test_a_filesystem_without_hard_links_fails_materialization_cleanly(
    rig: Rig, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(publishing by hard link fails: the temp file is removed and the error is clear)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))

    def no_links(*_args: Any) -> Any:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    with pytest.raises(PersistenceError, match=r'writing session "s1" failed: .*Operation not permitted'):
        await persistence.append("s1", one_user_turn())
    bucket = Path(log_path(str(root), CWD, "s1")).parent
    assert list(bucket.iterdir()) == []
    assert await persistence.has("s1") is False


async def test_a_lock_whose_new_directories_cannot_be_made_durable_is_let_go(
    rig: Rig, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(the first lock makes the root and its lock directory; if their entries cannot be fsynced the
    create fails clearly and the lock is not kept; the retry's first write still makes the root durable)"""
    persistence = await rig.mount()
    synced: list[str] = []

    def failing_fsync_dir(path: str) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(jsonl_plugin, "fsync_dir", failing_fsync_dir)
    with pytest.raises(PersistenceError, match=r'locking session "s1" failed: .*Input/output error') as raised:
        await persistence.create(meta("s1", CWD))
    assert raised.value.code == "STORAGE_IO"
    other = WriterLocks(str(root / ".locks"))
    assert other.acquire("s1") == []  # nobody holds it
    other.close()
    monkeypatch.setattr(jsonl_plugin, "fsync_dir", synced.append)
    await persistence.create(meta("s1", CWD))
    assert synced == []  # the lock directory exists now: the lock makes nothing new
    await persistence.append("s1", one_user_turn())
    assert {str(root.parent), str(root)} <= set(synced)  # the bucket's preparation syncs both entries


async def test_a_bucket_removed_after_its_first_log_is_made_again_for_the_next(rig: Rig, root: Path) -> None:
    """(a bucket is prepared once per instance; if it disappears, the next new log makes it again)"""
    persistence = await rig.mount()
    await persistence.create(meta("s1", CWD))
    await persistence.append("s1", one_user_turn())
    bucket = Path(log_path(str(root), CWD, "s1")).parent
    await persistence.delete("s1")
    bucket.rmdir()
    await persistence.create(meta("s2", CWD))
    await persistence.append("s2", one_user_turn())
    assert [path.name for path in bucket.iterdir()] == [Path(log_path(str(root), CWD, "s2")).name]
    assert stat.S_IMODE(bucket.stat().st_mode) == 0o700
    assert len((await persistence.load("s2")).events) == len(one_user_turn())


async def test_two_instances_on_one_root_never_overwrite_a_log(root: Path) -> None:
    """(one writer per session: the second instance is refused at create, naming the holder's pid;
    materialization still refuses to replace a log that a writer without a lock published meanwhile)"""
    contexts = [Context(), Context()]
    try:
        for ctx in contexts:
            await ctx.plugin(SessionStore)
            await ctx.plugin(SessionPersistenceJsonl, {"root": str(root)})
        left, right = (ctx[SESSION_PERSISTENCE] for ctx in contexts)
        await left.create(meta("s1", CWD))
        locked = rf'session "s1" is in use by another dsh process \(pid {os.getpid()}\)'
        with pytest.raises(PersistenceError, match=locked) as raised:
            await right.create(meta("s1", CWD))
        assert raised.value.code == "SESSION_LOCKED"
        with pytest.raises(PersistenceError, match=locked):
            await right.delete("s1")
        path = Path(log_path(str(root), CWD, "s1"))
        path.parent.mkdir(parents=True)
        path.write_bytes(expected_bytes(meta("s1", CWD), one_turn_log()))
        with pytest.raises(
            PersistenceError, match=r'refusing to materialize "s1": a log already exists on disk'
        ) as raised:
            await left.append("s1", one_user_turn())
        assert raised.value.code == "SESSION_EXISTS"
        assert path.read_bytes() == expected_bytes(meta("s1", CWD), one_turn_log())
    finally:
        for ctx in contexts:
            await ctx.dispose()


async def test_missing_parent_directories_are_created_private(rig: Rig, tmp_path: Path) -> None:
    """(every directory the backend creates is 0700)"""
    deep = tmp_path / "a" / "b" / "sessions"
    rig.kit.config = {"root": str(deep)}
    persistence = await rig.mount()
    await persistence.create(meta("s1"))
    await persistence.append("s1", one_user_turn())
    for directory in (tmp_path / "a", tmp_path / "a" / "b", deep, deep / "_no-cwd"):
        assert directory.stat().st_mode & 0o777 == 0o700
    assert seal(header_line(meta("s1")).encode()) in (deep / "_no-cwd" / "s1.jsonl").read_bytes()


async def test_a_symlinked_log_is_refused_and_its_target_is_never_touched(rig: Rig, root: Path, tmp_path: Path) -> None:
    """(bad input: a log that is a symbolic link is neither read nor repaired through the link)"""
    target = write_raw(tmp_path / "elsewhere", meta("s1", CWD), one_turn_log()[:3], tail=TORN_FRAGMENT)
    before = target.read_bytes()
    link = Path(log_path(str(root), CWD, "s1"))
    link.parent.mkdir(parents=True)
    link.symlink_to(target)
    persistence = await rig.mount()
    for attempt in (persistence.load("s1"), persistence.has("s1")):
        with pytest.raises(PersistenceError, match=r"is a symbolic link and dsh never follows one") as raised:
            await attempt
        assert raised.value.code == "SYMLINKED_LOG"
    assert await persistence.list() == []
    assert target.read_bytes() == before
