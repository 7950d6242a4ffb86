"""A session's files through an attached editor: buffers read, writes applied there, content versions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dsh.core.fs import FS, FS_WRITE_INTENT, FileSystem, FsError, FsWriteIntent, Workspace, content_version
from dsh.kernel import Context
from dsh.plugins.fs_local import LocalFileSystem


@dataclass
class Buffers:
    """An editor holding unsaved buffers over the disk (what a real editor does)."""

    reads: bool = True
    writes: bool = True
    open: dict[str, str] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)

    async def read(self, path: str) -> str:
        self.calls.append(("read", path))
        if path in self.open:
            return self.open[path]
        return Path(path).read_bytes().decode("utf-8")

    async def write(self, path: str, text: str) -> None:
        self.calls.append(("write", path))
        self.open[path] = text


@dataclass
class Stack:
    fs: FileSystem
    ws: Workspace
    root: Path


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    ctx = Context()
    await ctx.plugin(LocalFileSystem, {"root": str(tmp_path)})
    fs = ctx[FS]
    yield Stack(fs, fs.workspace(session_id="s1"), tmp_path)
    await ctx.dispose()


async def test_reads_come_from_the_buffer_and_writes_go_to_the_editor(stack: Stack) -> None:
    path = stack.root / "a.py"
    path.write_text("on disk\n")
    editor = Buffers(open={str(path): "unsaved\r\nsecond " + "x" * 30 + "\r\n"})
    detach = stack.fs.attach_editor("s1", editor)
    window = await stack.fs.read_window(stack.ws, "a.py", 2, 5, max_line_chars=10)
    assert window.lines == ("second xxx",)
    assert window.total_lines == 2
    assert window.cut_lines == (2,)
    assert window.newline == "\r\n"
    assert window.stat.version == content_version(editor.open[str(path)])
    whole = await stack.fs.read_text(stack.ws, "a.py")
    assert whole.text.startswith("unsaved\nsecond")
    stat = await stack.fs.stat(stack.ws, "a.py")
    assert stat is not None
    assert stat.version == whole.stat.version
    written = await stack.fs.replace_text(stack.ws, "a.py", "new\n", expected=stat.version, newline="\r\n")
    assert editor.open[str(path)] == "new\r\n"
    assert written.version == content_version("new\r\n")
    assert path.read_text() == "on disk\n"  # the editor saves when it likes
    # another session (or none) still reads the disk
    assert (await stack.fs.read_text(stack.fs.workspace(), "a.py")).text == "on disk\n"
    detach()
    detach()  # twice is harmless
    assert (await stack.fs.read_text(stack.ws, "a.py")).text == "on disk\n"


async def test_a_buffer_changed_since_the_read_is_stale(stack: Stack) -> None:
    path = stack.root / "a.txt"
    path.write_text("one\n")
    editor = Buffers()
    stack.fs.attach_editor("s1", editor)
    seen = await stack.fs.read_text(stack.ws, "a.txt")
    editor.open[str(path)] = "typed by the user\n"
    with pytest.raises(FsError) as caught:
        await stack.fs.replace_text(stack.ws, "a.txt", "two\n", expected=seen.stat.version)
    assert caught.value.code == "STALE"
    assert editor.open[str(path)] == "typed by the user\n"


async def test_new_files_directories_and_missing_files(stack: Stack) -> None:
    editor = Buffers()
    stack.fs.attach_editor("s1", editor)
    created = await stack.fs.write_text(stack.ws, "new/b.txt", "hello\n")
    assert created.version == content_version("hello\n")
    assert created.size == 6
    assert created.kind == "file"
    assert editor.open[str(stack.root / "new" / "b.txt")] == "hello\n"
    (stack.root / "dir").mkdir()
    with pytest.raises(FsError) as caught:
        await stack.fs.write_text(stack.ws, "dir", "x")
    assert caught.value.code == "IS_DIRECTORY"
    with pytest.raises(FsError) as caught:
        await stack.fs.read_text(stack.ws, "dir")
    assert caught.value.code == "IS_DIRECTORY"  # the backend says why
    with pytest.raises(FsError) as caught:
        await stack.fs.read_window(stack.ws, "missing.txt")
    assert caught.value.code == "NOT_FOUND"
    with pytest.raises(FsError) as caught:
        await stack.fs.replace_text(stack.ws, "gone.txt", "x", expected="v")
    assert caught.value.code == "STALE"
    assert await stack.fs.stat(stack.ws, "missing.txt") is None
    dir_stat = await stack.fs.stat(stack.ws, "dir")
    assert dir_stat is not None
    assert dir_stat.kind == "directory"
    with pytest.raises(FsError) as outside:
        await stack.fs.read_text(stack.ws, "/etc/hostname")
    assert outside.value.code == "OUTSIDE_WORKSPACE"  # workspace checks stay
    assert ("read", "/etc/hostname") not in editor.calls


async def test_a_write_only_editor_reads_the_disk_and_versions_by_content(stack: Stack) -> None:
    path = stack.root / "c.txt"
    path.write_bytes(b"a\r\nb\r\n")
    editor = Buffers(reads=False)
    stack.fs.attach_editor("s1", editor)
    seen = await stack.fs.read_text(stack.ws, "c.txt")
    assert seen.text == "a\nb\n"
    assert seen.stat.version == content_version("a\r\nb\r\n")
    await stack.fs.replace_text(stack.ws, "c.txt", "a\nc\n", expected=seen.stat.version, newline="\r\n")
    assert editor.calls == [("write", str(path))]
    assert editor.open[str(path)] == "a\r\nc\r\n"


async def test_a_read_only_editor_writes_to_the_disk_and_gates_still_run(stack: Stack) -> None:
    path = stack.root / "d.txt"
    path.write_text("x\n")
    editor = Buffers(writes=False)
    stack.fs.attach_editor("s1", editor)
    intents: list[str] = []

    async def gate(intent: FsWriteIntent, proceed: object) -> object:
        intents.append(intent.path)
        return await proceed()  # type: ignore[operator]

    stack.fs.ctx.on(FS_WRITE_INTENT, gate)
    await stack.fs.write_text(stack.ws, "d.txt", "y\n")
    assert path.read_text() == "y\n"
    assert intents == [str(path)]
    assert ("write", str(path)) not in editor.calls


async def test_windows_of_buffers_without_a_final_newline_and_empty_ones(stack: Stack) -> None:
    (stack.root / "e.txt").write_text("")
    (stack.root / "f.txt").write_text("")
    editor = Buffers(open={str(stack.root / "e.txt"): "a\nb", str(stack.root / "f.txt"): ""})
    stack.fs.attach_editor("s1", editor)
    window = await stack.fs.read_window(stack.ws, "e.txt")
    assert window.lines == ("a", "b")
    assert window.total_lines == 2
    assert window.cut_lines == ()
    assert (await stack.fs.read_window(stack.ws, "f.txt")).total_lines == 0


async def test_one_editor_per_session(stack: Stack) -> None:
    stack.fs.attach_editor("s1", Buffers())
    with pytest.raises(ValueError, match="already has an editor attached"):
        stack.fs.attach_editor("s1", Buffers())
