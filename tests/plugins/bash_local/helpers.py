"""Helpers for the bash-local tests: process-table checks and a TCP handshake.

A command tells the test "I am running, here are my pids" over a real socket on
127.0.0.1 (bash's ``/dev/tcp``): the test awaits the connection, so nothing waits on
a clock, and a command that never calls back only fails its own test (the wait is a
plain cancellable await).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
from collections.abc import Awaitable, Callable
from pathlib import Path

from dsh.kernel import Fiber
from dsh.plugins.bash_local import LocalBashExecutor

LoadExecutor = Callable[..., Awaitable[tuple[LocalBashExecutor, Fiber]]]
"""The ``load`` fixture: ``await load(config=None, grace_ms=200) -> (executor, fiber)``."""


def alive(pid: int) -> bool:
    """True while ``pid`` is a live process (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def exited(*pids: int) -> None:
    """Return once every pid has terminated, woken by the kernel (a pidfd), never by a clock.

    A process whose pipes have closed may still be finishing its exit; this waits for
    that. A pid that never terminates makes the calling test time out.
    """
    loop = asyncio.get_running_loop()
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        ready: asyncio.Future[None] = loop.create_future()
        loop.add_reader(fd, _settle, ready)
        try:
            await ready
        finally:
            loop.remove_reader(fd)
            os.close(fd)
    assert not any(alive(pid) for pid in pids)


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def wait_exited(*pids: int) -> None:
    """Blocking twin of :func:`exited` for code outside an event loop."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            fd = os.pidfd_open(pid)
            try:
                select.select([fd], [], [])
            finally:
                os.close(fd)
    assert not any(alive(pid) for pid in pids)


def file_bytes(path: str | Path) -> bytes:
    return Path(path).read_bytes()


def real(path: str | Path) -> str:
    """The canonical path (symlinks resolved), as ``pwd -P`` prints it."""
    return str(Path(path).resolve())


def file_size(path: str | Path) -> int:
    return os.path.getsize(path)


class Handshake:
    """A listening socket commands call back on.

    ``connect`` is the shell snippet opening fd 3 to it; ``echo $$ >&3`` then sends
    a line the test reads with :meth:`line` / :meth:`pids`, and :meth:`release`
    answers ``go`` (read by the command with ``read -r _ <&3``).
    """

    def __init__(self) -> None:
        self._connections: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()
        self._writers: list[asyncio.StreamWriter] = []
        self._current: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> Handshake:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        self._connections.put_nowait((reader, writer))

    @property
    def connect(self) -> str:
        return f"exec 3<>/dev/tcp/127.0.0.1/{self.port}"

    async def line(self) -> str:
        """The first line sent on the next connection."""
        self._current = await self._connections.get()
        return (await self._current[0].readline()).decode()

    async def next_line(self) -> str:
        """The next line on the connection last read from."""
        assert self._current is not None
        return (await self._current[0].readline()).decode()

    async def pids(self) -> list[int]:
        return [int(word) for word in (await self.line()).split()]

    async def release(self) -> None:
        """Answer ``go`` on the connection last read from."""
        assert self._current is not None
        self._current[1].write(b"go\n")
        await self._current[1].drain()

    async def close(self) -> None:
        for writer in self._writers:
            writer.close()
        for writer in self._writers:
            try:
                await writer.wait_closed()
            except ConnectionError:
                pass
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


async def until(predicate: Callable[[], bool]) -> None:
    """Yield to the loop, one tick at a time, until ``predicate()`` holds."""
    while not predicate():
        await asyncio.sleep(0)
