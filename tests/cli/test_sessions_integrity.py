"""Damaged logs as `dsh` reports them: a repaired torn tail said once on stderr, errors naming file and line."""

from __future__ import annotations

from pathlib import Path

from tests.cli.helpers import child_env, dsh, session_files, session_id_of


async def test_a_repaired_torn_tail_is_reported_once_naming_the_file(
    tmp_path: Path, workspace: Path, sessions_root: Path
) -> None:
    env = child_env(key=None, home=tmp_path / "home")
    storage = ["--demo", "--sessions-root", str(sessions_root)]
    first = await dsh(*storage, "--cwd", str(workspace), "run", "echo one", env=env, cwd=workspace)
    session_id = session_id_of(first.stderr)
    (path,) = session_files(sessions_root)
    size = path.stat().st_size
    with path.open("ab") as log:
        log.write(b'{"type":"turn/start","se')
    shows = [await dsh(*storage, "sessions", "show", session_id, env=env, cwd=workspace) for _ in range(2)]
    assert [show.status for show in shows] == [0, 0]
    assert f"{path}: removed a torn tail (an unfinished write) after byte {size}" in shows[0].stderr
    assert "torn tail" not in shows[1].stderr
    assert path.stat().st_size == size


async def test_a_damaged_committed_line_is_named_by_file_and_line(
    tmp_path: Path, workspace: Path, sessions_root: Path
) -> None:
    env = child_env(key=None, home=tmp_path / "home")
    storage = ["--demo", "--sessions-root", str(sessions_root)]
    first = await dsh(*storage, "--cwd", str(workspace), "run", "echo one", env=env, cwd=workspace)
    session_id = session_id_of(first.stderr)
    (path,) = session_files(sessions_root)
    lines = path.read_bytes().split(b"\n")
    lines[2] = b"garbage"
    path.write_bytes(b"\n".join(lines))
    shown = await dsh(*storage, "sessions", "show", session_id, env=env, cwd=workspace)
    assert shown.status == 1
    assert f"unparsable committed event at line 3 of {path}" in shown.stderr
