"""The workspace fence against a path swapped between the service's check and the backend's use.

Each deterministic test swaps a directory of the workspace (or the file itself) for a
symlink leading out at one precise moment: right after the service checked the real
path, or right after the backend took it again for a write. The read, write, replace,
listing or stat must then be refused, and nothing outside read or written. The stress
tests flip a link from a thread while reads and writes go through it.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from dsh.core.fs import FS_ACCESS, FsAccessRequest, FsError
from dsh.plugins.fs_local import backend
from tests.plugins.fs_local.conftest import Local


@dataclass
class Swap:
    """A workspace directory ``sub`` holding ``notes.txt``, and its twin ``outside`` beyond the fence."""

    local: Local
    sub: Path
    outside: Path

    def to_outside(self) -> None:
        """Move ``sub`` away and put a symlink to ``outside`` in its place."""
        self.sub.rename(self.sub.with_name("sub-moved"))
        self.sub.symlink_to(self.outside)

    def file_to_outside(self) -> None:
        """Replace ``sub/notes.txt`` itself by a symlink to ``outside/notes.txt``."""
        (self.sub / "notes.txt").unlink()
        (self.sub / "notes.txt").symlink_to(self.outside / "notes.txt")

    def outside_untouched(self) -> None:
        assert sorted(os.listdir(self.outside)) == ["notes.txt"]
        assert (self.outside / "notes.txt").read_text() == "secret\n"
        assert os.listdir(self.outside.parent / "extra") == []


@pytest.fixture
def swap(local: Local, tmp_path: Path) -> Swap:
    sub = local.root / "sub"
    sub.mkdir()
    (sub / "notes.txt").write_text("mine\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("secret\n")
    return Swap(local=local, sub=sub, outside=outside)


def swap_after(monkeypatch: pytest.MonkeyPatch, path: Path, action: Callable[[], None], call: int = 1) -> list[int]:
    """Run ``action`` right after the ``call``-th real path taken of ``path``: the first is the
    service's check, the second the backend's own for a write. Returns the count of such calls."""
    taken = [0]
    original = backend.real_path

    def hooked(asked: str) -> str:
        real = original(asked)
        if asked == str(path):
            taken[0] += 1
            if taken[0] == call:
                action()
        return real

    monkeypatch.setattr(backend, "real_path", hooked)
    return taken


async def refused(awaitable: object) -> FsError:
    with pytest.raises(FsError) as caught:
        await awaitable  # type: ignore[misc]
    assert caught.value.code == "OUTSIDE_WORKSPACE", caught.value.message
    return caught.value


# ------------------------------------------------------------------ swapped after the check
@pytest.mark.parametrize("operation", ["read_window", "read_text"])
async def test_a_read_swapped_out_after_the_check_is_refused(
    swap: Swap, monkeypatch: pytest.MonkeyPatch, operation: str
) -> None:
    local = swap.local
    taken = swap_after(monkeypatch, swap.sub / "notes.txt", swap.to_outside)
    error = await refused(getattr(local.fs, operation)(local.ws, "sub/notes.txt"))
    assert taken == [1]  # the service checked once; the backend's descriptor was checked, not the name again
    assert error.message.startswith(f"{swap.sub / 'notes.txt'} (a symlink to {swap.outside / 'notes.txt'})")
    assert "secret" not in error.message
    swap.outside_untouched()


async def test_a_write_swapped_out_after_the_check_is_refused(swap: Swap, monkeypatch: pytest.MonkeyPatch) -> None:
    local = swap.local
    swap_after(monkeypatch, swap.sub / "notes.txt", swap.to_outside)
    await refused(local.fs.write_text(local.ws, "sub/notes.txt", "pwned\n"))
    swap.outside_untouched()
    assert (local.root / "sub-moved" / "notes.txt").read_text() == "mine\n"
    assert os.listdir(local.root / "sub-moved") == ["notes.txt"]


async def test_a_write_swapped_out_after_the_backend_took_its_real_path_is_refused(
    swap: Swap, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = swap.local
    taken = swap_after(monkeypatch, swap.sub / "notes.txt", swap.to_outside, call=2)
    await refused(local.fs.write_text(local.ws, "sub/notes.txt", "pwned\n"))
    assert taken == [2]
    swap.outside_untouched()
    assert os.listdir(local.root / "sub-moved") == ["notes.txt"]


@pytest.mark.parametrize("call", [1, 2])
async def test_a_replace_swapped_out_after_the_check_is_refused(
    swap: Swap, monkeypatch: pytest.MonkeyPatch, call: int
) -> None:
    local = swap.local
    window = await local.fs.read_window(local.ws, "sub/notes.txt")
    swap_after(monkeypatch, swap.sub / "notes.txt", swap.to_outside, call=call)
    await refused(local.fs.replace_text(local.ws, "sub/notes.txt", "pwned\n", expected=window.stat.version))
    swap.outside_untouched()
    assert (local.root / "sub-moved" / "notes.txt").read_text() == "mine\n"


async def test_new_parents_are_never_made_outside(swap: Swap, monkeypatch: pytest.MonkeyPatch) -> None:
    local = swap.local
    swap_after(monkeypatch, swap.sub / "new" / "deeper" / "file.txt", swap.to_outside)
    await refused(local.fs.write_text(local.ws, "sub/new/deeper/file.txt", "pwned\n"))
    swap.outside_untouched()  # not even the empty directories 'new' and 'new/deeper'


async def test_a_listing_swapped_out_after_the_check_is_refused(swap: Swap, monkeypatch: pytest.MonkeyPatch) -> None:
    local = swap.local
    swap_after(monkeypatch, swap.sub, swap.to_outside)
    error = await refused(local.fs.list_dir(local.ws, "sub"))
    assert "notes.txt" not in error.message


async def test_a_stat_swapped_out_after_the_check_is_refused(swap: Swap, monkeypatch: pytest.MonkeyPatch) -> None:
    local = swap.local
    swap_after(monkeypatch, swap.sub / "notes.txt", swap.to_outside)
    await refused(local.fs.stat(local.ws, "sub/notes.txt"))
    swap.outside_untouched()


async def test_a_file_turned_into_a_link_after_the_backend_took_its_real_path_is_not_written_through(
    swap: Swap, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = swap.local
    swap_after(monkeypatch, swap.sub / "notes.txt", swap.file_to_outside, call=2)
    with pytest.raises(FsError) as caught:
        await local.fs.write_text(local.ws, "sub/notes.txt", "pwned\n")
    assert caught.value.code == "STALE"
    assert "(it became a symlink): write it again" in caught.value.message
    assert (swap.sub / "notes.txt").is_symlink()
    assert os.listdir(swap.sub) == ["notes.txt"]
    swap.outside_untouched()


# ------------------------------------------------------------------ fs/access listeners
async def test_an_access_listener_may_allow_the_swapped_path(swap: Swap, monkeypatch: pytest.MonkeyPatch) -> None:
    local = swap.local
    asked: list[FsAccessRequest] = []

    def allow(request: FsAccessRequest, next_: object) -> bool:
        asked.append(request)
        return request.real_path.startswith(str(swap.outside))

    local.ctx.on(FS_ACCESS, allow)
    swap_after(monkeypatch, swap.sub / "notes.txt", swap.to_outside)
    window = await local.fs.read_window(local.ws, "sub/notes.txt")
    assert window.lines == ("secret",)
    assert [(r.path, r.real_path, r.operation) for r in asked] == [
        (str(swap.sub / "notes.txt"), str(swap.outside / "notes.txt"), "read")
    ]


async def test_an_allowed_outside_path_is_asked_about_once_per_operation(local: Local, tmp_path: Path) -> None:
    outside = tmp_path / "allowed"
    outside.mkdir()
    (outside / "a.txt").write_text("ok\n")
    asked: list[str] = []

    def allow(request: FsAccessRequest, next_: object) -> bool:
        asked.append(request.operation)
        return True

    local.ctx.on(FS_ACCESS, allow)
    assert (await local.fs.read_text(local.ws, str(outside / "a.txt"))).text == "ok\n"
    await local.fs.write_text(local.ws, str(outside / "new" / "b.txt"), "new\n")
    assert [os.path.basename(e.path) for e in await local.fs.list_dir(local.ws, str(outside))] == ["a.txt", "new"]
    assert (await local.fs.stat(local.ws, str(outside / "new" / "b.txt"))) is not None
    assert asked == ["read", "write", "list", "stat"]
    assert (outside / "new" / "b.txt").read_text() == "new\n"


# ------------------------------------------------------------------ the write's own directory walk
async def test_a_parent_made_meanwhile_by_another_writer_is_used(local: Local, monkeypatch: pytest.MonkeyPatch) -> None:
    real_mkdir = os.mkdir

    def racing(path: str, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        real_mkdir(path, mode, dir_fd=dir_fd)  # the other writer wins the race
        raise FileExistsError(17, "File exists")

    monkeypatch.setattr(os, "mkdir", racing)
    await local.fs.write_text(local.ws, "a/b/c.txt", "x\n")
    assert (local.root / "a" / "b" / "c.txt").read_text() == "x\n"


async def test_a_temporary_file_that_cannot_be_made_is_an_io_error(local: Local) -> None:
    name = "n" * 250  # a legal name whose temporary twin is too long
    with pytest.raises(FsError) as caught:
        await local.fs.write_text(local.ws, name, "x\n")
    assert caught.value.code == "IO_ERROR"
    assert caught.value.message.startswith(f"cannot write {local.root / name}: ")
    assert os.listdir(local.root) == []


# ------------------------------------------------------------------ a link flipping under load
@pytest.fixture
def flipping(local: Local, tmp_path: Path) -> Iterator[tuple[Path, Path, list[int]]]:
    """``ws/link`` flipping between ``ws/inside.txt`` and an outside file, atomically, from a thread.
    Yields the link, the outside file and the count of flips so far."""
    inside = local.root / "inside.txt"
    inside.write_text("inside\n")
    outside = tmp_path / "outside.txt"
    outside.write_text("secret\n")
    link = local.root / "link"
    link.symlink_to(inside)
    spare = tmp_path / "link.next"  # prepared beside, renamed over the link: it always exists
    flips = [0]
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            spare.symlink_to(outside if flips[0] % 2 == 0 else inside)
            os.replace(spare, link)
            flips[0] += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # let the flipper in between any two steps of a read
    thread = threading.Thread(target=flip, daemon=True)
    thread.start()
    try:
        yield link, outside, flips
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)


async def test_reads_through_a_flipping_link_never_see_the_outside(
    local: Local, flipping: tuple[Path, Path, list[int]]
) -> None:
    _, _, flips = flipping
    answers: dict[str, int] = {}
    reads = 0
    while reads < 3000 or flips[0] < 3000:
        reads += 1
        try:
            if reads % 2:
                text = (await local.fs.read_text(local.ws, "link")).text
            else:
                text = "\n".join((await local.fs.read_window(local.ws, "link")).lines) + "\n"
        except FsError as error:
            text = error.code
        answers[text] = answers.get(text, 0) + 1
    assert set(answers) <= {"inside\n", "OUTSIDE_WORKSPACE"}, answers  # never "secret\n"


async def test_writes_through_a_flipping_link_never_reach_the_outside(
    local: Local, flipping: tuple[Path, Path, list[int]], tmp_path: Path
) -> None:
    _, outside, flips = flipping
    writes = 0
    outcomes: dict[str, int] = {}
    while writes < 300 or flips[0] < 1000:
        writes += 1
        try:
            await local.fs.write_text(local.ws, "link", f"write {writes}\n")
        except FsError as error:
            outcome = error.code
        else:
            outcome = "written"
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert set(outcomes) <= {"written", "OUTSIDE_WORKSPACE"}, outcomes
    assert outside.read_text() == "secret\n"
    assert set(os.listdir(tmp_path)) - {"link.next"} == {"extra", "outside.txt", "ws"}  # no temporary file
    assert not [name for name in os.listdir(local.root) if name.endswith(".dsh-tmp")]
