"""WriterLocks: flock lock files, one holder per session id, the holder's pid in the refusal."""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

import pytest

from dsh.core.persistence import PersistenceError, WriterLocks
from dsh.core.persistence import locks as locks_module


def test_a_second_instance_is_refused_naming_the_holder_and_may_lock_once_it_is_released(tmp_path: Path) -> None:
    holder, other = WriterLocks(str(tmp_path / "locks")), WriterLocks(str(tmp_path / "locks"))
    holder.acquire("s1")
    holder.acquire("s1")  # already held by this instance: a no-op
    path = Path(holder.path("s1"))
    assert path.read_text() == f"{os.getpid()}\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    with pytest.raises(
        PersistenceError, match=rf'session "s1" is in use by another dsh process \(pid {os.getpid()}\)'
    ) as raised:
        other.acquire("s1")
    assert raised.value.code == "SESSION_LOCKED"
    other.acquire("s2")  # another id: its own lock
    holder.close()
    assert path.read_text() == ""  # a holder that lets go is named no more
    holder.close()  # idempotent
    other.acquire("s1")
    other.close()


def test_a_holder_that_has_not_written_its_pid_is_named_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(locks_module, "HOLDER_WAIT_S", 0.01)
    locks = WriterLocks(str(tmp_path))
    fd = os.open(locks.path("s1"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(PersistenceError, match=r"\(pid unknown\)"):
            locks.acquire("s1")
    finally:
        os.close(fd)


def test_a_gone_holders_pid_is_not_named_while_the_new_holder_has_not_written_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(a SIGKILLed holder leaves its pid; a refused writer waits for a live one instead of naming it)"""
    monkeypatch.setattr(locks_module, "HOLDER_WAIT_S", 0.05)
    gone = os.fork()
    if gone == 0:  # pragma: no cover - the child exits at once
        os._exit(0)
    os.waitpid(gone, 0)
    locks = WriterLocks(str(tmp_path))
    Path(locks.path("s1")).write_text(f"{gone}\n")
    fd = os.open(locks.path("s1"), os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(PersistenceError, match=r"\(pid unknown\)"):
            locks.acquire("s1")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getppid()}\n".encode(), 0)  # a live process
        with pytest.raises(PersistenceError, match=rf"\(pid {os.getppid()}\)"):
            locks.acquire("s1")

        def not_ours(pid: int, signal: int) -> None:
            raise PermissionError(1, "Operation not permitted")

        monkeypatch.setattr(os, "kill", not_ours)  # a live process of another user
        with pytest.raises(PersistenceError, match=rf"\(pid {os.getppid()}\)"):
            locks.acquire("s1")
    finally:
        os.close(fd)


def test_a_lock_directory_that_cannot_exist_is_a_storage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(
        PersistenceError, match=r'cannot open the writer lock of session "s1" at .*Not a directory'
    ) as raised:
        WriterLocks(str(blocker / "locks")).acquire("s1")
    assert raised.value.code == "STORAGE_IO"


def test_a_symlinked_lock_file_is_refused(tmp_path: Path) -> None:
    locks = WriterLocks(str(tmp_path))
    target = tmp_path / "target"
    target.write_text("keep")
    os.symlink(target, locks.path("s1"))
    with pytest.raises(PersistenceError, match=r"cannot open the writer lock"):
        locks.acquire("s1")
    assert target.read_text() == "keep"


def test_releasing_one_session_lets_another_writer_take_it_and_keeps_the_others(tmp_path: Path) -> None:
    holder, other = WriterLocks(str(tmp_path)), WriterLocks(str(tmp_path))
    holder.acquire("s1")
    holder.acquire("s2")
    holder.release("s1")
    assert Path(holder.path("s1")).read_text() == ""  # the refusal names a holder no more
    other.acquire("s1")
    with pytest.raises(PersistenceError, match=r'session "s2" is in use') as raised:
        other.acquire("s2")
    assert raised.value.code == "SESSION_LOCKED"
    holder.release("s1")  # not held any more: a no-op (the other instance keeps it)
    with pytest.raises(PersistenceError, match=r'session "s1" is in use'):
        holder.acquire("s1")
    holder.close()
    other.close()


def test_the_lock_directory_is_made_by_the_first_lock_only_and_again_once_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []
    real_mkdir = os.mkdir

    def counting_mkdir(path: str, mode: int = 0o777) -> None:
        made.append(path)
        real_mkdir(path, mode)

    monkeypatch.setattr(os, "mkdir", counting_mkdir)
    directory = tmp_path / "store" / "locks"
    locks = WriterLocks(str(directory))
    assert locks.acquire("s1") == [str(tmp_path / "store"), str(directory)]
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    made.clear()
    assert locks.acquire("s2") == []
    assert locks.acquire("s1") == []  # already held
    assert made == []  # the directory exists: no mkdir per lock
    locks.close()
    for lock in directory.iterdir():
        lock.unlink()
    directory.rmdir()
    assert locks.acquire("s3") == [str(directory)]
    assert Path(locks.path("s3")).read_text() == f"{os.getpid()}\n"
    locks.close()
