"""fs-local against real files: windows, text rules, atomic writes, the workspace boundary."""

from __future__ import annotations

import os
import stat
import tracemalloc
from pathlib import Path

import pytest

from dsh.core.fs import FS_ACCESS, FS_OBSERVED, FS_WRITE_INTENT, FsAccessRequest, FsError, FsObservation, FsWriteIntent
from dsh.plugins.fs_local import LocalFileSystem, binary_kind, detect_newline
from dsh.plugins.fs_local.text import CHUNK_BYTES
from tests.plugins.fs_local.conftest import Local


async def fs_error(awaitable: object, code: str) -> FsError:
    with pytest.raises(FsError) as caught:
        await awaitable  # type: ignore[misc]
    assert caught.value.code == code, caught.value.message
    return caught.value


# ------------------------------------------------------------------ workspace and paths
async def test_workspace_defaults_to_the_configured_root_and_takes_a_session_cwd(local: Local, tmp_path: Path) -> None:
    assert local.ws.root == str(local.root)
    assert local.ws.extra_dirs == (str(tmp_path / "extra"),)
    assert local.fs.workspace(str(tmp_path)).root == str(tmp_path)
    assert local.ws.display(str(local.root)) == "."
    assert local.ws.display(str(local.root / "a" / "b.txt")) == "a/b.txt"
    assert local.ws.display("/elsewhere/x") == "/elsewhere/x"


async def test_workspace_without_any_root_is_the_process_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dsh.core.fs import FS
    from dsh.kernel import Context

    monkeypatch.chdir(tmp_path)
    ctx = Context()
    await ctx.plugin(LocalFileSystem, {})
    try:
        assert ctx[FS].workspace().root == str(tmp_path)
    finally:
        await ctx.dispose()


async def test_resolve_accepts_relative_absolute_and_extra_paths(local: Local, tmp_path: Path) -> None:
    assert local.fs.resolve(local.ws, "a/../b.txt") == str(local.root / "b.txt")
    assert local.fs.resolve(local.ws, str(local.root / "c.txt")) == str(local.root / "c.txt")
    assert local.fs.resolve(local.ws, str(tmp_path / "extra" / "d.txt")) == str(tmp_path / "extra" / "d.txt")


async def test_resolve_refuses_paths_outside_with_a_clear_error(local: Local, tmp_path: Path) -> None:
    with pytest.raises(FsError) as caught:
        local.fs.resolve(local.ws, "../secret.txt")
    assert caught.value.code == "OUTSIDE_WORKSPACE"
    assert caught.value.message == (
        f"{tmp_path / 'secret.txt'} is outside the workspace ({local.root}, {tmp_path / 'extra'}): use a path inside it"
    )
    with pytest.raises(FsError, match="the path is empty"):
        local.fs.resolve(local.ws, "  ")
    with pytest.raises(FsError, match="NUL"):
        local.fs.resolve(local.ws, "a\0b")


async def test_a_symlink_pointing_out_of_the_workspace_is_refused(local: Local, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    (local.root / "link.txt").symlink_to(outside)
    (local.root / "dir-link").symlink_to(tmp_path)
    error = await fs_error(local.fs.read_window(local.ws, "link.txt"), "OUTSIDE_WORKSPACE")
    assert f"(a symlink to {outside})" in error.message
    await fs_error(local.fs.write_text(local.ws, "dir-link/outside.txt", "x"), "OUTSIDE_WORKSPACE")
    assert outside.read_text() == "secret\n"


async def test_an_fs_access_listener_may_allow_an_outside_path(local: Local, tmp_path: Path) -> None:
    outside = tmp_path / "allowed.txt"
    outside.write_text("ok\n")
    asked: list[FsAccessRequest] = []

    def allow(request: FsAccessRequest, next_: object) -> bool:
        asked.append(request)
        return request.path.endswith("allowed.txt")

    local.ctx.on(FS_ACCESS, allow)
    window = await local.fs.read_window(local.ws, str(outside))
    assert window.lines == ("ok",)
    assert asked[0].operation == "read"
    assert asked[0].real_path == str(outside)
    with pytest.raises(FsError):
        local.fs.resolve(local.ws, str(tmp_path / "other.txt"))


# ------------------------------------------------------------------------- windows
async def test_read_window_numbers_counts_and_strips_line_endings(local: Local) -> None:
    (local.root / "a.txt").write_bytes(b"one\ntwo\nthree\nfour")
    window = await local.fs.read_window(local.ws, "a.txt", offset=2, limit=2)
    assert window.lines == ("two", "three")
    assert (window.offset, window.total_lines, window.newline, window.cut_lines) == (2, 4, "\n", ())
    assert window.stat.kind == "file"
    assert window.stat.size == 18
    empty = local.root / "empty.txt"
    empty.write_bytes(b"")
    assert (await local.fs.read_window(local.ws, "empty.txt")).total_lines == 0


async def test_read_window_of_a_crlf_file(local: Local) -> None:
    (local.root / "dos.txt").write_bytes(b"alpha\r\nbeta\r\n")
    window = await local.fs.read_window(local.ws, "dos.txt")
    assert window.lines == ("alpha", "beta")
    assert window.newline == "\r\n"
    assert window.total_lines == 2


async def test_long_lines_are_cut_and_streamed(local: Local) -> None:
    huge = "é" * (CHUNK_BYTES * 3)
    (local.root / "long.txt").write_text(f"short\n{huge}\n{'x' * 30}\n{huge}")
    window = await local.fs.read_window(local.ws, "long.txt", max_line_chars=20)
    assert window.lines == ("short", "é" * 20, "x" * 20, "é" * 20)
    assert window.cut_lines == (2, 3, 4)
    assert window.total_lines == 4
    skipped = await local.fs.read_window(local.ws, "long.txt", offset=3, limit=1, max_line_chars=100)
    assert skipped.lines == ("x" * 30,)
    assert skipped.total_lines == 4
    (local.root / "tail.txt").write_text("a\n" + "b" * (CHUNK_BYTES + 10))
    tail = await local.fs.read_window(local.ws, "tail.txt", max_line_chars=CHUNK_BYTES * 2)
    assert tail.lines == ("a", "b" * (CHUNK_BYTES + 10))
    assert tail.cut_lines == ()


async def test_a_50_mb_file_reads_a_window_without_loading_the_file(local: Local) -> None:
    big = local.root / "big.log"
    line = b"%07d " + b"x" * 41 + b"\n"
    with big.open("wb") as out:
        for start in range(0, 1_000_000, 10_000):
            out.write(b"".join(line % number for number in range(start + 1, start + 10_001)))
    assert big.stat().st_size == 50_000_000
    tracemalloc.start()
    try:
        window = await local.fs.read_window(local.ws, "big.log", offset=999_998, limit=2000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert window.total_lines == 1_000_000
    assert window.lines == ("0999998 " + "x" * 41, "0999999 " + "x" * 41, "1000000 " + "x" * 41)
    assert peak < 2_000_000  # a few chunks, never the 50 MB file


async def test_binary_files_are_refused_naming_type_and_size(local: Local) -> None:
    (local.root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(100))
    error = await fs_error(local.fs.read_window(local.ws, "logo.png"), "BINARY")
    assert error.message.startswith(f"{local.root / 'logo.png'} is a binary file (PNG image, 110 bytes)")
    (local.root / "blob.bin").write_bytes(b"ab\x00cd")
    error = await fs_error(local.fs.read_text(local.ws, "blob.bin"), "BINARY")
    assert "(application/octet-stream, 5 bytes)" in error.message
    assert binary_kind(b"\x00\x01", "noext") == "binary data"
    assert binary_kind(b"plain", "x.png") is None


async def test_non_utf8_text_is_refused_naming_the_line(local: Local) -> None:
    (local.root / "latin.txt").write_bytes(b"ok\ncaf\xe9\n")
    error = await fs_error(local.fs.read_window(local.ws, "latin.txt"), "NOT_UTF8")
    assert "byte 0xe9 on line 2" in error.message
    assert "iconv" in error.message
    error = await fs_error(local.fs.read_text(local.ws, "latin.txt"), "NOT_UTF8")
    assert "byte 0xe9 on line 2" in error.message
    (local.root / "cut.txt").write_bytes(b"abc\xc3")
    await fs_error(local.fs.read_window(local.ws, "cut.txt"), "NOT_UTF8")
    (local.root / "cut-line.txt").write_bytes(b"abc\xc3\n")
    await fs_error(local.fs.read_window(local.ws, "cut-line.txt"), "NOT_UTF8")


async def test_directories_missing_files_and_devices_are_refused(local: Local) -> None:
    (local.root / "sub").mkdir()
    error = await fs_error(local.fs.read_window(local.ws, "sub"), "IS_DIRECTORY")
    assert "is a directory, not a file: list it with glob" in error.message
    await fs_error(local.fs.read_text(local.ws, "nope.txt"), "NOT_FOUND")
    os.mkfifo(local.root / "pipe")
    await fs_error(local.fs.read_window(local.ws, "pipe"), "NOT_A_FILE")
    await fs_error(local.fs.read_window(local.ws, "n" * 300), "IO_ERROR")


# --------------------------------------------------------------------------- text
async def test_read_text_normalizes_crlf_and_keeps_a_bom(local: Local) -> None:
    (local.root / "dos.txt").write_bytes(b"\xef\xbb\xbfa\r\nb\r\n")
    file = await local.fs.read_text(local.ws, "dos.txt")
    assert file.text == "\ufeffa\nb\n"
    assert file.newline == "\r\n"
    assert detect_newline(b"x\ny\r\n") == "\n"
    assert detect_newline(b"\n") == "\n"


# -------------------------------------------------------------------------- writes
async def test_write_creates_parents_with_the_umask_mode_and_leaves_no_temp_file(local: Local) -> None:
    stat_ = await local.fs.write_text(local.ws, "new/dir/file.txt", "hello\n")
    target = local.root / "new" / "dir" / "file.txt"
    assert target.read_text() == "hello\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~_umask()
    assert stat_.size == 6
    assert stat_.path == str(target)
    assert os.listdir(target.parent) == ["file.txt"]


async def test_write_keeps_mode_and_writes_crlf(local: Local) -> None:
    script = local.root / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o751)
    inode = script.stat().st_ino
    await local.fs.write_text(local.ws, "run.sh", "#!/bin/sh\necho hi\n", newline="\r\n")
    assert script.read_bytes() == b"#!/bin/sh\r\necho hi\r\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o751
    assert script.stat().st_ino != inode  # a new file renamed over the old one


async def test_write_through_an_inside_symlink_replaces_its_target(local: Local) -> None:
    (local.root / "real.txt").write_text("old\n")
    (local.root / "alias.txt").symlink_to(local.root / "real.txt")
    await local.fs.write_text(local.ws, "alias.txt", "new\n")
    assert (local.root / "alias.txt").is_symlink()
    assert (local.root / "real.txt").read_text() == "new\n"


async def test_write_refusals(local: Local) -> None:
    (local.root / "sub").mkdir()
    await fs_error(local.fs.write_text(local.ws, "sub", "x"), "IS_DIRECTORY")
    (local.root / "plain").write_text("x")
    await fs_error(local.fs.write_text(local.ws, "plain/child.txt", "x"), "IO_ERROR")
    error = await fs_error(local.fs.write_text(local.ws, "bad.txt", "a\ud800"), "INVALID_TEXT")
    assert "lone surrogate at character 1" in error.message
    assert not (local.root / "bad.txt").exists()


async def test_a_failed_rename_removes_the_temp_file(local: Local, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_src: str, _dst: str, **_dir_fds: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="No space"):
        await local.fs.write_text(local.ws, "f.txt", "x")
    assert os.listdir(local.root) == []


async def test_replace_requires_the_expected_version(local: Local) -> None:
    (local.root / "f.txt").write_text("one\n")
    seen = await local.fs.stat(local.ws, "f.txt")
    assert seen is not None
    (local.root / "f.txt").write_text("one!\n")
    error = await fs_error(local.fs.replace_text(local.ws, "f.txt", "two\n", expected=seen.version), "STALE")
    assert "changed on disk since it was read: read it again" in error.message
    now = await local.fs.stat(local.ws, "f.txt")
    assert now is not None
    await local.fs.replace_text(local.ws, "f.txt", "two\n", expected=now.version)
    assert (local.root / "f.txt").read_text() == "two\n"
    (local.root / "f.txt").unlink()
    await fs_error(local.fs.replace_text(local.ws, "f.txt", "x", expected=now.version), "STALE")
    assert await local.fs.stat(local.ws, "f.txt") is None


async def test_write_intent_gate_may_veto_and_observers_see_reads_and_writes(local: Local) -> None:
    intents: list[FsWriteIntent] = []
    observed: list[FsObservation] = []

    def gate(intent: FsWriteIntent, next_: object) -> object:
        intents.append(intent)
        if intent.path.endswith(".lock"):
            raise FsError("lock files are protected: leave them alone", "DENIED", intent.path)
        return next_()  # type: ignore[operator]

    local.ctx.on(FS_WRITE_INTENT, gate)
    local.ctx.on(FS_OBSERVED, observed.append)
    await local.fs.write_text(local.ws, "a.txt", "a\n")
    await fs_error(local.fs.write_text(local.ws, "uv.lock", "x"), "DENIED")
    assert not (local.root / "uv.lock").exists()
    await local.fs.read_text(local.ws, "a.txt")
    assert [(i.operation, os.path.basename(i.path)) for i in intents] == [("write", "a.txt"), ("write", "uv.lock")]
    assert [o.operation for o in observed] == ["write", "read"]


# --------------------------------------------------------------------- list and glob
async def test_list_dir_names_kinds_without_following_links(local: Local) -> None:
    (local.root / "b.txt").write_text("b")
    (local.root / "a").mkdir()
    (local.root / "c").symlink_to(local.root / "b.txt")
    entries = await local.fs.list_dir(local.ws, ".")
    assert [(os.path.basename(e.path), e.kind) for e in entries] == [
        ("a", "directory"),
        ("b.txt", "file"),
        ("c", "symlink"),
    ]
    await fs_error(local.fs.list_dir(local.ws, "missing"), "NOT_FOUND")
    await fs_error(local.fs.list_dir(local.ws, "b.txt"), "NOT_A_FILE")
    os.mkfifo(local.root / "fifo")
    assert (await local.fs.stat(local.ws, "fifo")).kind == "other"  # type: ignore[union-attr]


async def test_glob_lists_files_newest_first_capped_and_inside(local: Local, tmp_path: Path) -> None:
    for index, name in enumerate(["src/a.py", "src/deep/b.py", "c.py", "notes.txt", ".hidden/d.py"]):
        path = local.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
        os.utime(path, ns=(10**18 + index * 10**9, 10**18 + index * 10**9))
    (local.root / "pkg.py").mkdir()
    (tmp_path / "out.py").write_text("x")
    (local.root / "escape.py").symlink_to(tmp_path / "out.py")
    (local.root / "dangling.py").symlink_to(local.root / "gone")
    found = await local.fs.glob(local.ws, "**/*.py")
    assert [local.ws.display(e.path) for e in found.files] == ["c.py", "src/deep/b.py", "src/a.py"]
    assert found.total == 3
    capped = await local.fs.glob(local.ws, "**/*.py", limit=1)
    assert len(capped.files) == 1
    assert capped.total == 3
    assert [e.path for e in (await local.fs.glob(local.ws, "*.py", "src")).files] == [str(local.root / "src" / "a.py")]
    await fs_error(local.fs.glob(local.ws, "/etc/*"), "INVALID_PATH")
    await fs_error(local.fs.glob(local.ws, "../*"), "INVALID_PATH")
    await fs_error(local.fs.glob(local.ws, "*", "missing"), "NOT_FOUND")
    await fs_error(local.fs.glob(local.ws, "*", "c.py"), "NOT_A_FILE")


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


async def test_a_workspace_root_is_resolved_once_it_exists_and_a_missing_one_at_each_use(
    local: Local, tmp_path: Path
) -> None:
    """(the roots' real paths are cached per service; a root that appears later as a symlink is seen)"""
    target = tmp_path / "target"
    target.mkdir()
    (target / "a.txt").write_text("inside\n")
    later = tmp_path / "later"
    workspace = local.fs.workspace(str(later))
    await fs_error(local.fs.read_window(workspace, str(target / "a.txt")), "OUTSIDE_WORKSPACE")
    later.symlink_to(target)  # the root appears, as a link to target
    window = await local.fs.read_window(workspace, "a.txt")
    assert list(window.lines) == ["inside"]
    later.unlink()
    later.symlink_to(tmp_path)  # a root seen once keeps the directory it named then
    (tmp_path / "b.txt").write_text("beside\n")
    await fs_error(local.fs.read_window(workspace, str(tmp_path / "b.txt")), "OUTSIDE_WORKSPACE")
