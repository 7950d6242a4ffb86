"""fs-local's fast paths: the kernel-asked real path, in-memory windows of small files, and
the same answers (and refusals) whichever path a read takes."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from dsh.core.fs import FsError
from dsh.plugins.fs_local.backend import INLINE_READ_BYTES, real_path
from dsh.plugins.fs_local.text import read_lines, window_lines
from tests.plugins.fs_local.conftest import Local


def test_real_path_agrees_with_os_realpath(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "file.txt").write_text("x")
    (tmp_path / "to-dir").symlink_to(tmp_path / "dir")
    (tmp_path / "to-file").symlink_to("dir/file.txt")  # a relative link
    (tmp_path / "chain").symlink_to(tmp_path / "to-file")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # opening it for its path must not block
    paths = [
        "dir",
        "dir/file.txt",
        "to-dir/file.txt",
        "to-file",
        "chain",
        "dangling",
        "loop-a",
        "missing/tail.txt",
        "to-dir/missing.txt",
        "dir/file.txt/under-a-file",
        "fifo",
        "dir/../to-file",
    ]
    for relative in paths:
        path = str(tmp_path / relative)
        assert real_path(path) == os.path.realpath(path), relative
    assert real_path(str(tmp_path / "chain")) == str(tmp_path / "dir" / "file.txt")


def test_real_path_of_a_file_removed_meanwhile_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "f.txt"
    target.write_text("x")
    monkeypatch.setattr(os, "readlink", lambda link: f"{target} (deleted)")
    assert real_path(str(target)) == str(target)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n",
        b"one",
        b"one\ntwo\nthree\n",
        b"one\ntwo\nthree",
        b"\n\n\n",
        b"dos\r\nlines\r\nhere\r\n",
        b"mixed\r\nend\n",
        ("é" * 50 + "\nshort\n" + "x" * 40 + "\n" + "ü" * 60).encode(),
    ],
)
def test_an_in_memory_window_is_the_streamed_window(data: bytes) -> None:
    for offset in range(1, 6):
        for limit in (1, 2, 10):
            for max_chars in (5, 30, 2000):
                streamed = read_lines(io.BytesIO(data), "p", len(data), offset, limit, max_chars)
                assert window_lines(data, "p", offset, limit, max_chars) == streamed, (offset, limit, max_chars)


@pytest.mark.parametrize(
    "data",
    [b"ok\ncaf\xe9\n", b"ok\nlong " + b"y" * 40 + b"\xff\n", b"a\nb\nabc\xc3", b"a\nabc\xc3\n"],
)
def test_an_in_memory_window_refuses_bad_bytes_naming_the_streamed_line(data: bytes) -> None:
    with pytest.raises(FsError) as streamed:
        read_lines(io.BytesIO(data), "p", len(data), 1, 10, 1000)
    with pytest.raises(FsError) as in_memory:
        window_lines(data, "p", 1, 10, 1000)
    assert in_memory.value.message == streamed.value.message
    assert in_memory.value.code == "NOT_UTF8"


async def test_reads_above_the_inline_size_take_the_worker_and_answer_the_same(local: Local) -> None:
    small = "".join(f"line {n}\n" for n in range(1, 1001)).encode()
    assert len(small) < INLINE_READ_BYTES
    big = small * (INLINE_READ_BYTES // len(small) + 1)
    assert len(big) > INLINE_READ_BYTES
    (local.root / "small.txt").write_bytes(small)
    (local.root / "big.txt").write_bytes(big)
    window = await local.fs.read_window(local.ws, "small.txt", offset=999, limit=5)
    assert (window.lines, window.total_lines) == (("line 999", "line 1000"), 1000)
    lines = big.count(b"\n")
    window = await local.fs.read_window(local.ws, "big.txt", offset=lines, limit=5)
    assert (window.lines, window.total_lines) == (("line 1000",), lines)
    assert (await local.fs.read_text(local.ws, "big.txt")).text == big.decode()
    (local.root / "bad.txt").write_bytes(big + b"caf\xe9\n")
    error = await _refusal(local.fs.read_text(local.ws, "bad.txt"))
    assert f"on line {lines + 1}" in error.message
    error = await _refusal(local.fs.read_window(local.ws, "bad.txt", offset=lines + 1))
    assert f"on line {lines + 1}" in error.message


async def _refusal(awaitable: object) -> FsError:
    with pytest.raises(FsError) as caught:
        await awaitable  # type: ignore[misc]
    assert caught.value.code == "NOT_UTF8"
    return caught.value


async def test_a_symlink_swapped_in_after_a_read_cannot_take_the_write_out(local: Local, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    target = local.root / "notes.txt"
    target.write_text("mine\n")
    window = await local.fs.read_window(local.ws, "notes.txt")
    target.unlink()
    target.symlink_to(outside)  # swapped in after the read, before the write
    with pytest.raises(FsError) as caught:
        await local.fs.replace_text(local.ws, "notes.txt", "changed\n", expected=window.stat.version)
    assert caught.value.code == "OUTSIDE_WORKSPACE"
    with pytest.raises(FsError) as caught:
        await local.fs.stat(local.ws, "notes.txt")
    assert caught.value.code == "OUTSIDE_WORKSPACE"
    assert outside.read_text() == "secret\n"
