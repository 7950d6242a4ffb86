"""``dsh chat`` in a real pseudo-terminal, its output fed to a terminal emulator (pyte).

:func:`chat_in_pty` starts ``dsh chat`` as a subprocess whose controlling terminal is a
pseudo-terminal; :class:`Screen` is the master side: it feeds everything the program
draws to a ``pyte`` screen (so cursor moves, erases and redraws are applied as a real
terminal applies them) and types keys (Enter, Ctrl-C and Ctrl-D go through the
terminal's line discipline, as a user's keys do). Tests assert the visible lines.
"""

from __future__ import annotations

import asyncio
import errno
import fcntl
import os
import struct
import termios
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pyte

from tests.cli.helpers import DSH

ROWS = 60
COLUMNS = 120


class PtyMaster:
    """The master side of a pseudo-terminal: every byte the program wrote (``raw``), and keystrokes.

    ``changed`` is set at each read; ``closed`` once the program closed its side.
    Subclasses see each read through :meth:`feed`.
    """

    def __init__(self, master: int) -> None:
        self.master = master
        self.changed = asyncio.Event()
        self.closed = False
        self.raw = b""
        asyncio.get_running_loop().add_reader(master, self._readable)

    def feed(self, data: bytes) -> None:
        """Called with each chunk read (nothing by default)."""

    def _readable(self) -> None:
        try:
            data = os.read(self.master, 65536)
        except OSError as error:
            if error.errno != errno.EIO:  # EIO: the program closed its side of the terminal
                raise
            data = b""
        if not data:
            self.closed = True
            asyncio.get_running_loop().remove_reader(self.master)
        self.raw += data
        self.feed(data)
        self.changed.set()

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def close(self) -> None:
        if not self.closed:
            asyncio.get_running_loop().remove_reader(self.master)
        os.close(self.master)


def controlling_terminal() -> None:
    """In the child, after ``setsid``: make its stdin (the pty slave) its controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Screen(PtyMaster):
    """A :class:`PtyMaster` drawn on a ``pyte`` screen of ``ROWS`` x ``COLUMNS``."""

    def __init__(self, master: int) -> None:
        self.screen = pyte.Screen(COLUMNS, ROWS)
        self.stream = pyte.ByteStream(self.screen)
        super().__init__(master)

    def feed(self, data: bytes) -> None:
        self.stream.feed(data)

    @property
    def lines(self) -> list[str]:
        """The visible lines, trailing blanks removed."""
        return [line.rstrip() for line in self.screen.display]

    @property
    def text(self) -> str:
        return "\n".join(line for line in self.lines if line)

    async def wait_until(self, check: Callable[[list[str]], bool], what: str, timeout: float = 30) -> None:
        async def wait() -> None:
            while not check(self.lines):
                assert not self.closed, f"the program ended before {what}:\n{self.text}"
                self.changed.clear()
                await self.changed.wait()

        try:
            await asyncio.wait_for(wait(), timeout)
        except TimeoutError:
            raise AssertionError(f"no {what} after {timeout} s; the screen:\n{self.text}") from None

    async def wait_for(self, marker: str, count: int = 1) -> None:
        await self.wait_until(lambda _lines: self.text.count(marker) >= count, f"{marker!r} x{count}")


@asynccontextmanager
async def chat_in_pty(
    *args: str, env: dict[str, str], cwd: Path
) -> AsyncIterator[tuple[Screen, asyncio.subprocess.Process]]:
    """``dsh <args>`` on a fresh pseudo-terminal; killed on the way out if still running."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
    process = await asyncio.create_subprocess_exec(
        str(DSH),
        *args,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**env, "TERM": "xterm", "COLUMNS": str(COLUMNS), "LINES": str(ROWS)},
        cwd=cwd,
        start_new_session=True,
        preexec_fn=controlling_terminal,
    )
    os.close(slave)
    screen = Screen(master)
    try:
        yield screen, process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        screen.close()
