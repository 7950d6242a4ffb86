"""``fs-local``: the :class:`FileSystem` over the machine's own files.

Resolving a path, a stat and the read of a small file (at most :data:`INLINE_READ_BYTES`,
as the open file's own stat says) run on the event loop: each is a few system calls on an
already open file, cheaper than the hop to a worker thread. Larger reads, every write
(its flush to disk may wait on the device), listings and globs run in worker threads,
so a large file never stalls the event loop.
Writes go to a temporary file in the target's directory, are flushed to disk and renamed
over the target (readers see the old or the new file, never a torn one); an existing
file keeps its permission bits, a new one gets ``0666`` minus the process umask, and
missing parent directories are created. A write through a symlink replaces the file it
points to, never the link. Text only: a binary file is refused naming its type and size,
and bytes that are not UTF-8 are refused naming the line.

The workspace fence binds the objects used, not the names: a read opens the file and
passes the real path of that descriptor (``/proc/self/fd/N``) to the service's
:data:`~dsh.core.fs.PathCheck` before reading a byte; a stat and a listing do the same
with the path or directory they opened. A write opens the target's directory (``O_PATH``),
checks that descriptor's real path, and creates, renames and stats the file relative to
it (``dir_fd``), so the version check of a ``replace`` and its rename concern one
directory entry; a missing parent is created only inside a directory checked the same
way. A symlink swapped into the path after the service's check (by a concurrent command)
therefore cannot lead a read, write, stat or listing out of the workspace. Glob results
are checked by their real paths.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob as globbing
import os
import secrets
import stat as stats
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field

from dsh.core.fs import (
    FileKind,
    FileStat,
    FileSystem,
    FsError,
    FsWriteIntent,
    GlobResult,
    PathCheck,
    TextFile,
    TextWindow,
    is_within,
)
from dsh.kernel import ConfigPath, Context
from dsh.plugins.fs_local.text import (
    SNIFF_BYTES,
    binary_kind,
    decode_text,
    detect_newline,
    read_lines,
    refuse_binary,
    window_lines,
)


class LocalFsConfig(BaseModel):
    """``root``: the workspace of callers without a session cwd (default: the process cwd);
    ``extraDirs``: directories every workspace may also use. Both are
    :data:`~dsh.kernel.ConfigPath` values (``~`` and ``$NAME`` expanded, relative to the tree file)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    root: ConfigPath | None = None
    extra_dirs: list[ConfigPath] = Field(default_factory=list, alias="extraDirs")


def _kind(mode: int) -> FileKind:
    if stats.S_ISREG(mode):
        return "file"
    if stats.S_ISDIR(mode):
        return "directory"
    return "symlink" if stats.S_ISLNK(mode) else "other"


def to_stat(path: str, result: os.stat_result) -> FileStat:
    """A :class:`FileStat` from ``os.stat``; the version is inode, mtime and size."""
    return FileStat(
        path=path,
        kind=_kind(result.st_mode),
        size=result.st_size,
        mtime_ns=result.st_mtime_ns,
        mode=stats.S_IMODE(result.st_mode),
        version=f"{result.st_ino}-{result.st_mtime_ns}-{result.st_size}",
    )


def _missing(path: str) -> FsError:
    return FsError(f"{path} does not exist: check the path (glob finds files by name)", "NOT_FOUND", path)


def _directory(path: str) -> FsError:
    return FsError(
        f"{path} is a directory, not a file: list it with glob (pattern '*', path {path!r}) or bash `ls`",
        "IS_DIRECTORY",
        path,
    )


def _open_file(path: str, check: PathCheck) -> tuple[int, os.stat_result]:
    """The open file ``path`` with its stat, once ``check`` accepted the descriptor's real path."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO must not block the open
    except FileNotFoundError as error:
        raise _missing(path) from error
    except IsADirectoryError as error:  # pragma: no cover - Linux opens directories read-only; guard for others
        raise _directory(path) from error
    except OSError as error:
        raise FsError(f"cannot open {path}: {error.strerror}", "IO_ERROR", path, error) from error
    _checked(fd, path, check)
    result = os.fstat(fd)
    if stats.S_ISREG(result.st_mode):
        return fd, result
    os.close(fd)
    if stats.S_ISDIR(result.st_mode):
        raise _directory(path)
    raise FsError(f"{path} is not a regular file (a device, socket or pipe): read files only", "NOT_A_FILE", path)


def _encode(text: str, path: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise FsError(
            f"the text for {path} is not valid Unicode (a lone surrogate at character {error.start}): "
            "write plain UTF-8 text",
            "INVALID_TEXT",
            path,
            error,
        ) from error


T = TypeVar("T")


def _capture(work: Callable[..., Any], *args: Any) -> tuple[Any, Exception | None]:
    try:
        return work(*args), None
    except Exception as error:
        return None, error


async def off_loop(work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` in a worker thread. Its failure comes back as a value and is raised
    here, never thrown into an awaiting frame (CPython 3.11 would then stop tracing the
    callers, see docs/architecture.md §6)."""
    value, error = await asyncio.to_thread(_capture, work, *args)
    if error is not None:
        raise error
    return cast(T, value)


INLINE_READ_BYTES = 64 * 1024
"""Files up to this size are read on the event loop; larger ones in a worker thread."""


_FD_LINKS = "/proc/self/fd"
"""Where Linux names each open file descriptor's path (absent elsewhere)."""

_O_PATH = getattr(os, "O_PATH", 0)
_O_HANDLE = (_O_PATH or os.O_NONBLOCK) | os.O_CLOEXEC
"""Opens a path to name or stat it, nothing read (without ``O_PATH``: read-only, a FIFO not waited on)."""


def opened_path(fd: int, path: str) -> str:
    """The real path of the open descriptor ``fd`` (opened as ``path``).

    The kernel names the object itself, so a link swapped into ``path`` after the open
    does not change the answer. Without ``/proc`` the name is walked again instead.
    """
    try:
        return os.readlink(f"{_FD_LINKS}/{fd}")
    except OSError:  # pragma: no cover - /proc not mounted: the name's walk, not bound to the descriptor
        return os.path.realpath(path)


def _checked(fd: int, path: str, check: PathCheck, tail: str = "") -> int:
    """``fd`` once ``check`` accepted its real path (joined with ``tail``); closed if refused."""
    try:
        real = opened_path(fd, path)
        check(os.path.join(real, tail) if tail else real)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _stat_now(path: str, check: PathCheck) -> FileStat | None:
    try:
        fd = os.open(path, _O_HANDLE)
    except FileNotFoundError:
        return None
    try:
        check(opened_path(fd, path))
        return to_stat(path, os.fstat(fd))
    finally:
        os.close(fd)


def _open_directory(directory: str, tail: str, check: PathCheck) -> int:
    """A descriptor of ``directory`` (``O_PATH``), once ``check`` accepted the real path
    ``tail`` has under it (closed if refused).

    A missing directory is made in its parent, opened and checked this way first, so
    nothing is created outside the workspace either.
    """
    try:
        fd = os.open(directory, _O_HANDLE | os.O_DIRECTORY)
    except FileNotFoundError:
        parent, name = os.path.split(directory)
        parent_fd = _open_directory(parent, os.path.join(name, tail), check)
        try:
            with contextlib.suppress(FileExistsError):  # made meanwhile, by a concurrent write
                os.mkdir(name, dir_fd=parent_fd)
            fd = os.open(name, _O_HANDLE | os.O_DIRECTORY, dir_fd=parent_fd)
        finally:
            os.close(parent_fd)
    return _checked(fd, directory, check, tail)


def real_path(path: str) -> str:
    """``os.path.realpath(path)``, asked of the kernel when it can answer.

    An existing path is opened with ``O_PATH`` (no read access needed, nothing read) and
    the kernel's name of that descriptor is its real path, every link followed: three
    system calls instead of one ``lstat`` per component. A path that does not exist (a
    missing tail), one removed meanwhile, or a system without ``/proc`` takes
    ``os.path.realpath``.
    """
    if _O_PATH:
        try:
            fd = os.open(path, _O_PATH | os.O_CLOEXEC)
        except OSError:
            return os.path.realpath(path)  # missing, a dangling link, a loop: the Python walk says what is left
        try:
            real = opened_path(fd, path)
        finally:
            os.close(fd)
        if real.startswith("/") and not real.endswith(" (deleted)"):
            return real
    return os.path.realpath(path)  # pragma: no cover - systems without O_PATH; a file removed meanwhile


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class LocalFileSystem(FileSystem):
    """The local backend; see the module docstring. Provided as ``ctx[FS]`` while loaded."""

    name = "fs-local"
    Config = LocalFsConfig

    def __init__(self, ctx: Context, config: LocalFsConfig) -> None:
        super().__init__(ctx, default_root=config.root, extra_dirs=config.extra_dirs)
        self.new_file_mode = 0o666 & ~_current_umask()

    def _real_path(self, path: str) -> str:
        return real_path(path)

    async def _stat(self, path: str, check: PathCheck) -> FileStat | None:
        return _stat_now(path, check)

    async def _read_window(
        self, path: str, check: PathCheck, offset: int, limit: int, max_line_chars: int
    ) -> TextWindow:
        fd, result = _open_file(path, check)
        if result.st_size <= INLINE_READ_BYTES:
            return self._window(fd, result, path, offset, limit, max_line_chars)
        return await off_loop(self._window, fd, result, path, offset, limit, max_line_chars)

    def _window(
        self, fd: int, result: os.stat_result, path: str, offset: int, limit: int, max_line_chars: int
    ) -> TextWindow:
        """The window of the open file ``fd`` (closed here) whose stat is ``result``."""
        with os.fdopen(fd, "rb") as file:
            head = file.read(SNIFF_BYTES)
            kind = binary_kind(head, path)
            if kind is not None:
                raise refuse_binary(path, result.st_size, kind)
            if result.st_size <= INLINE_READ_BYTES:  # small: all of it in memory, split at once
                data = head + file.read()
                lines, total, cut = window_lines(data, path, offset, limit, max_line_chars)
            else:
                file.seek(0)
                lines, total, cut = read_lines(file, path, result.st_size, offset, limit, max_line_chars)
        return TextWindow(
            path=path,
            lines=lines,
            offset=offset,
            total_lines=total,
            newline=detect_newline(head),
            stat=to_stat(path, result),
            cut_lines=cut,
        )

    async def _read_text(self, path: str, check: PathCheck) -> TextFile:
        fd, result = _open_file(path, check)
        if result.st_size <= INLINE_READ_BYTES:
            return self._text(fd, result, path)
        return await off_loop(self._text, fd, result, path)

    def _text(self, fd: int, result: os.stat_result, path: str) -> TextFile:
        """The text of the open file ``fd`` (closed here) whose stat is ``result``."""
        with os.fdopen(fd, "rb") as file:
            data = file.read()
        kind = binary_kind(data[:SNIFF_BYTES], path)
        if kind is not None:
            raise refuse_binary(path, len(data), kind)
        text = decode_text(data, path)
        newline = detect_newline(data[:SNIFF_BYTES])
        if newline == "\r\n":
            text = text.replace("\r\n", "\n")
        return TextFile(path=path, text=text, newline=newline, stat=to_stat(path, result))

    async def _write(self, intent: FsWriteIntent, check: PathCheck) -> FileStat:
        return await off_loop(self._write_now, intent, check)

    def _write_now(self, intent: FsWriteIntent, check: PathCheck) -> FileStat:
        path = intent.path
        directory, base = os.path.split(real_path(path))
        try:
            dfd = _open_directory(directory, base, check)
        except OSError as error:
            raise FsError(f"cannot write {path}: {error.strerror}", "IO_ERROR", path, error) from error
        try:
            return self._write_in(dfd, base, intent)
        finally:
            os.close(dfd)

    def _write_in(self, dfd: int, base: str, intent: FsWriteIntent) -> FileStat:
        """Write ``intent`` as the entry ``base`` of the checked directory ``dfd``: the version
        check, the temporary file, the rename and the final stat all name that one entry."""
        path = intent.path
        try:
            current: os.stat_result | None = os.stat(base, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            current = None
        if current is not None and stats.S_ISDIR(current.st_mode):
            raise _directory(path)
        if current is not None and stats.S_ISLNK(current.st_mode):  # swapped in since its real path was taken
            raise FsError(
                f"{path} changed while it was being written (it became a symlink): write it again", "STALE", path
            )
        if intent.operation == "replace" and (current is None or to_stat(path, current).version != intent.expected):
            raise FsError(
                f"{path} changed on disk since it was read: read it again and redo the change",
                "STALE",
                path,
            )
        data = _encode(intent.text if intent.newline == "\n" else intent.text.replace("\n", intent.newline), path)
        mode = stats.S_IMODE(current.st_mode) if current is not None else self.new_file_mode
        temp = f".{base}.{secrets.token_hex(4)}.dsh-tmp"
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600, dir_fd=dfd)
        except OSError as error:
            raise FsError(f"cannot write {path}: {error.strerror}", "IO_ERROR", path, error) from error
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
                file.flush()
                os.fchmod(file.fileno(), mode)
                os.fsync(file.fileno())
            os.replace(temp, base, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            os.unlink(temp, dir_fd=dfd)
            raise
        return to_stat(path, os.stat(base, dir_fd=dfd, follow_symlinks=False))

    async def _list_dir(self, path: str, check: PathCheck) -> tuple[FileStat, ...]:
        return await off_loop(self._list_now, path, check)

    def _list_now(self, path: str, check: PathCheck) -> tuple[FileStat, ...]:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError as error:
            raise _missing(path) from error
        except NotADirectoryError as error:
            raise FsError(f"{path} is a file, not a directory: read it with read", "NOT_A_FILE", path) from error
        try:
            check(opened_path(fd, path))
            names = sorted(os.listdir(fd))
            return tuple(to_stat(os.path.join(path, name), os.lstat(name, dir_fd=fd)) for name in names)
        finally:
            os.close(fd)

    async def _glob(self, base: str, pattern: str, limit: int, roots: Sequence[str]) -> GlobResult:
        return await off_loop(self._glob_now, base, pattern, limit, roots)

    def _glob_now(self, base: str, pattern: str, limit: int, roots: Sequence[str]) -> GlobResult:
        if not os.path.isdir(base):
            if not os.path.exists(base):
                raise _missing(base)
            raise FsError(f"{base} is a file, not a directory: pass its directory as path", "NOT_A_FILE", base)
        found: list[FileStat] = []
        for relative in globbing.iglob(pattern, root_dir=base, recursive=True):
            full = os.path.join(base, relative)
            try:
                result = os.stat(full)
            except OSError:  # a dangling link
                continue
            if stats.S_ISREG(result.st_mode) and is_within(os.path.realpath(full), roots):
                found.append(to_stat(os.path.normpath(full), result))
        found.sort(key=lambda entry: (-entry.mtime_ns, entry.path))
        return GlobResult(files=tuple(found[:limit]), total=len(found))
