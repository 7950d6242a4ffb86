"""glob and grep (on the packaged ripgrep) against real workspaces."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsh.core.errors import HarnessError
from dsh.kernel import AbortController
from dsh.plugins.tool_fs import ripgrep_path, search
from dsh.plugins.tool_fs.search import parse_matches, ripgrep_args, run_ripgrep
from tests.plugins.tool_fs.conftest import Stack


def touch(path: Path, content: str = "x\n", age: int = 0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    when = 1_700_000_000 - age
    os.utime(path, (when, when))


async def test_glob_lists_files_newest_first(stack: Stack) -> None:
    touch(stack.ws / "src" / "old.py", age=100)
    touch(stack.ws / "src" / "new.py", age=1)
    touch(stack.ws / "README.md")
    assert await stack.text("glob", {"pattern": "**/*.py"}) == "src/new.py\nsrc/old.py"
    assert await stack.text("glob", {"pattern": "*.py", "path": "src"}) == "src/new.py\nsrc/old.py"
    assert await stack.text("glob", {"pattern": "*.rs"}) == "No files match *.rs in the workspace."
    assert "pattern is empty" in await stack.error("glob", {"pattern": " "})
    assert "must be relative" in await stack.error("glob", {"pattern": "/etc/*"})


async def test_glob_is_capped(stack: Stack) -> None:
    for index in range(105):
        touch(stack.ws / f"f{index:03}.txt", age=index)
    lines = (await stack.text("glob", {"pattern": "*.txt"})).split("\n")
    assert lines[0] == "f000.txt"
    assert len(lines) == 101
    assert lines[-1] == "[100 of 105 files shown, newest first: narrow the pattern or path]"


async def test_grep_groups_matches_by_file_and_honors_gitignore(stack: Stack) -> None:
    touch(stack.ws / "a.py", "import os\nx = os.getcwd()\n")
    touch(stack.ws / "lib" / "b.py", "print('no')\nos = 1\n")
    touch(stack.ws / "notes.md", "os notes\n")
    touch(stack.ws / "build" / "gen.py", "os generated\n")
    touch(stack.ws / ".gitignore", "build/\n")
    text = await stack.text("grep", {"pattern": r"\bos\b", "include": "*.py"})
    assert text == "a.py\n1: import os\n2: x = os.getcwd()\n\nlib/b.py\n2: os = 1\n[3 matches in 2 files]"
    assert (
        await stack.text("grep", {"pattern": "notes", "path": "notes.md"})
        == "notes.md\n1: os notes\n[1 match in 1 file]"
    )
    assert await stack.text("grep", {"pattern": "zzz"}) == "No matches for /zzz/ in the workspace."
    assert "grep failed: " in await stack.error("grep", {"pattern": "("})
    assert "missing does not exist" in await stack.error("grep", {"pattern": "x", "path": "missing"})
    assert "pattern is empty" in await stack.error("grep", {"pattern": ""})
    assert "outside the workspace" in await stack.error("grep", {"pattern": "x", "path": "/"})


async def test_grep_caps_its_matches(stack: Stack) -> None:
    touch(stack.ws / "many.txt", "hit\n" * 250)
    lines = (await stack.text("grep", {"pattern": "hit"})).split("\n")
    assert len(lines) == 202
    assert lines[-1] == "[the first 200 matches in 1 file; narrow the pattern, path or include to see the rest]"


async def test_ripgrep_runs_capped_and_abortable(tmp_path: Path) -> None:
    touch(tmp_path / "big.txt", "hit\n" * 200_000)  # more than a pipe holds: ripgrep is still writing at the cap
    capped = await run_ripgrep(ripgrep_args("hit", "big.txt", None), str(tmp_path), None, cap=100)
    assert capped.truncated is True
    assert 0 < len(capped.matches) < 20
    touch(tmp_path / "t.txt", "hit\n" * 1000)
    controller = AbortController()
    controller.abort("stop")
    with pytest.raises(HarnessError, match="search aborted"):
        await run_ripgrep(ripgrep_args("hit", "t.txt", None), str(tmp_path), controller.signal)
    done = await run_ripgrep(ripgrep_args("hit", "t.txt", None), str(tmp_path), AbortController().signal)
    assert len(done.matches) == 1000
    assert done.exit_code == 0


async def test_killing_a_finished_process_is_harmless() -> None:
    import asyncio

    process = await asyncio.create_subprocess_exec("true")
    await process.wait()
    search._kill(process)
    assert process.returncode == 0


def test_parse_matches_skips_lines_it_cannot_read() -> None:
    assert parse_matches(b"a.py\x003:x = 1\nnoise\nb.py\x00y:z\n") == [search.Match(path="a.py", line=3, text="x = 1")]


def test_ripgrep_is_found_beside_the_interpreter_or_on_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert os.access(ripgrep_path(), os.X_OK)
    monkeypatch.setenv("PATH", os.path.dirname(ripgrep_path()))
    assert search._candidates()[-1] == ripgrep_path()
    monkeypatch.setenv("PATH", str(tmp_path))
    assert ripgrep_path() not in search._candidates()[2:]
    monkeypatch.setattr(search, "_candidates", lambda: [str(tmp_path / "rg")])
    ripgrep_path.cache_clear()
    try:
        with pytest.raises(HarnessError, match="ripgrep \\(rg\\) was not found") as caught:
            ripgrep_path()
        assert caught.value.code == "RIPGREP_MISSING"
    finally:
        ripgrep_path.cache_clear()
