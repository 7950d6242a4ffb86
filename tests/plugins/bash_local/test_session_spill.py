"""Spill files in the session's folder (size caps, oldest first) and live ``bash/output`` events.

Real ``bash`` commands print more than the in-memory tail holds; the spill files land
in ``<sessionFiles>/_session-files/<session>/bash/`` and that folder stays under its
total cap.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from dsh.core.bash import BASH_OUTPUT, BashExecRequest
from dsh.kernel import Context
from dsh.plugins.bash_local import (
    SESSION_FILES,
    bash_spill_dir,
    prune_spills,
    session_folder,
    session_segment,
)
from tests.plugins.bash_local.helpers import LoadExecutor


@dataclass
class _Session:
    id: str


@dataclass
class _Agent:
    session: _Session


def agent_of(session_id: str) -> _Agent:
    return _Agent(_Session(session_id))


def test_session_folders_are_one_segment_each() -> None:
    assert session_segment("3f2a-b.c_d") == "3f2a-b.c_d"
    hashed = {session_segment(raw) for raw in ("a/b", "..", ".", "a b", "\ud800")}
    assert len(hashed) == 5
    assert all(name.startswith("~") and len(name) == 65 for name in hashed)
    assert session_folder("/r", "s1") == os.path.join("/r", SESSION_FILES, "s1")
    assert bash_spill_dir("/r", "s1") == os.path.join("/r", SESSION_FILES, "s1", "bash")


async def test_a_sessions_long_output_spills_into_its_folder_capped(load: LoadExecutor, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    config = {"sessionFiles": str(root), "maxOutputBytes": 1000, "maxSpillBytes": 50_000}
    bash, _fiber = await load(config)
    request = BashExecRequest(command="seq 1 20000", agent=agent_of("s-1"))
    result = await bash.run(bash.resolve(request))
    folder = root / SESSION_FILES / "s-1" / "bash"
    assert result.stdout.truncated
    assert result.stdout.spill_path is not None
    spill = Path(result.stdout.spill_path)
    assert spill.parent == folder
    assert spill.stat().st_size == 50_000
    assert result.stdout.spill_truncated
    assert spill.read_bytes().startswith(b"1\n2\n3\n")
    assert result.stdout.text.endswith("19999\n20000\n")
    assert folder.stat().st_mode & 0o777 == 0o700
    # a call of no session (and a session of no id) spills to the executor's own directory
    for agent in (None, agent_of("")):
        other = await bash.run(bash.resolve(BashExecRequest(command="seq 1 2000", agent=agent)))
        assert other.stdout.spill_path is not None
        assert Path(other.stdout.spill_path).parent == Path(bash.internals.spill_dir or "")


async def test_the_session_folder_keeps_under_its_total_cap_oldest_first(load: LoadExecutor, tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    config = {"sessionFiles": str(root), "maxOutputBytes": 1000, "maxSessionSpillBytes": 250_000}
    bash, _fiber = await load(config)
    agent = agent_of("s-2")
    paths = []
    for _ in range(4):  # about 108 kB each: two fit under the cap
        result = await bash.run(bash.resolve(BashExecRequest(command="seq 1 20000 | head -c 108000", agent=agent)))
        assert result.stdout.spill_path is not None
        paths.append(Path(result.stdout.spill_path))
    folder = root / SESSION_FILES / "s-2" / "bash"
    assert sorted(folder.iterdir()) == sorted(paths[2:])  # the two oldest are gone
    assert sum(path.stat().st_size for path in folder.iterdir()) <= 250_000
    planted = folder / "planted.log"  # over the cap, but a command that spills nothing leaves the folder alone
    planted.write_bytes(b"x" * 300_000)
    quiet = await bash.run(bash.resolve(BashExecRequest(command="echo short", agent=agent)))
    assert quiet.stdout.spill_path is None
    assert sorted(folder.iterdir()) == sorted([*paths[2:], planted])
    planted.unlink()
    task = bash.start(bash.resolve(BashExecRequest(command="seq 1 30000", agent=agent)))
    await task.done
    read = bash.read_output(task.id)
    assert read.stdout_spill_path is not None
    assert Path(read.stdout_spill_path).exists()
    assert Path(read.stdout_spill_path).parent == folder
    assert not paths[2].exists()


def test_pruning_skips_what_it_cannot_read_or_remove(tmp_path: Path) -> None:
    assert prune_spills(str(tmp_path / "absent"), 0) == []
    (tmp_path / "old").write_bytes(b"x" * 10)
    os.utime(tmp_path / "old", ns=(1, 1))
    (tmp_path / "kept").write_bytes(b"y" * 10)
    os.utime(tmp_path / "kept", ns=(2, 2))
    (tmp_path / "sub").mkdir()  # not a file: never counted
    (tmp_path / "new").write_bytes(b"z" * 10)
    assert prune_spills(str(tmp_path), 100) == []
    removed = prune_spills(str(tmp_path), 10, keep={str(tmp_path / "kept")})
    assert removed == [str(tmp_path / "old"), str(tmp_path / "new")]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["kept", "sub"]


def test_pruning_goes_on_past_a_file_it_cannot_remove(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for index, name in enumerate(("first", "second")):
        (tmp_path / name).write_bytes(b"x" * 10)
        os.utime(tmp_path / name, ns=(index + 1, index + 1))
    real_unlink = os.unlink

    def unlink(path: str) -> None:
        if path.endswith("first"):
            raise PermissionError(path)
        real_unlink(path)

    monkeypatch.setattr(os, "unlink", unlink)
    assert prune_spills(str(tmp_path), 10) == [str(tmp_path / "second")]


async def test_a_foreground_run_emits_its_output_live(
    load: LoadExecutor, root: Context, caplog: pytest.LogCaptureFixture
) -> None:
    bash, _fiber = await load()
    quiet = await bash.run(bash.resolve(BashExecRequest(command="echo before anyone listens")))
    assert quiet.stdout.text == "before anyone listens\n"
    agent = agent_of("s-3")
    seen: list[tuple[object, str, str]] = []
    root.on(BASH_OUTPUT, lambda who, stream, piece: seen.append((who, stream, piece)))
    command = "printf caf; sleep 0.2; printf '\\303'; sleep 0.2; printf '\\251\\n'; echo oops >&2"
    result = await bash.run(bash.resolve(BashExecRequest(command=command, agent=agent)))
    assert result.stdout.text == "café\n"
    assert all(who is agent for who, _, _ in seen)
    assert "".join(piece for _, stream, piece in seen if stream == "stdout") == "café\n"  # é split: arrives whole
    assert [piece for _, stream, piece in seen if stream == "stderr"] == ["oops\n"]
    task = bash.start(bash.resolve(BashExecRequest(command="echo in the background", agent=agent)))
    await task.done
    assert not any("background" in piece for _, _, piece in seen)  # background output is read, not streamed

    def broken(*_args: object) -> None:
        raise RuntimeError("listener broke")

    root.on(BASH_OUTPUT, broken)
    with caplog.at_level(logging.WARNING):
        survived = await bash.run(bash.resolve(BashExecRequest(command="echo still fine", agent=agent)))
    assert survived.stdout.text == "still fine\n"
    assert "listener broke" in caplog.text
