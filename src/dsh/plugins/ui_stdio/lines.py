"""Lines of a file descriptor (stdin) as an async iterator that never blocks the event loop.

:func:`read_lines` reads on a worker thread and hands each line to the loop with
``call_soon_threadsafe``. The thread waits in ``poll`` on the descriptor and on a private
wake-up pipe, so closing the iterator (or cancelling the task iterating it) stops the
thread at once and joins it: nothing is left reading after the iterator is closed.

The descriptor itself is never switched to non-blocking mode, so a terminal whose stdin
and stdout share one open file stays safe to write to. POSIX only (``select.poll``);
pipes, terminals, sockets, regular files and ``/dev/null`` all work.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import select
import threading
from collections.abc import AsyncGenerator, Callable
from typing import TypeAlias

CHUNK_SIZE = 65536
"""How many bytes one ``read`` asks for."""

Item: TypeAlias = "str | OSError | None"
"""What the worker thread delivers: a line, the read error that ended input, or None at end of input."""


def post(loop: asyncio.AbstractEventLoop, put: Callable[[Item], None], item: Item) -> bool:
    """Hand ``item`` to ``put`` on ``loop`` from another thread; False once the loop is closed."""
    try:
        loop.call_soon_threadsafe(put, item)
    except RuntimeError:  # the loop was closed under a reader nobody closed
        return False
    return True


def read_descriptor(fd: int, wake_fd: int, deliver: Callable[[Item], bool]) -> None:
    """The worker thread's body: deliver each line of ``fd``, then None (or the ``OSError``).

    Lines are decoded as UTF-8 (invalid bytes become U+FFFD) and delivered without their
    ``\\n``; a last line without one is delivered at end of input. Returns without
    delivering anything more as soon as ``wake_fd`` becomes readable or ``deliver``
    returns False (the consumer is gone).
    """
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    poller.register(wake_fd, select.POLLIN)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = ""
    try:
        while True:
            ready = [descriptor for descriptor, _ in poller.poll()]
            if wake_fd in ready:
                return
            chunk = os.read(fd, CHUNK_SIZE)
            pending += decoder.decode(chunk, final=not chunk)
            *lines, pending = pending.split("\n")
            if not chunk and pending:
                lines.append(pending)
            for line in lines:
                if not deliver(line):
                    return
            if not chunk:
                break
    except OSError as error:
        deliver(error)
        return
    deliver(None)


async def read_lines(fd: int = 0) -> AsyncGenerator[str, None]:
    """Yield the lines of ``fd`` (default: the process's stdin) without their ``\\n``.

    The worker thread starts on the first ``__anext__``. The iterator ends at end of
    input and raises the ``OSError`` a failed read raised. Closing it (``aclose()``) or
    cancelling the task waiting on it stops and joins the thread before returning; the
    descriptor itself is left open (it belongs to the caller).
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Item] = asyncio.Queue()
    wake_read, wake_write = os.pipe()

    def deliver(item: Item) -> bool:
        return post(loop, queue.put_nowait, item)

    thread = threading.Thread(
        target=read_descriptor, args=(fd, wake_read, deliver), name=f"dsh read_lines fd {fd}", daemon=True
    )
    thread.start()
    try:
        while True:
            item = await queue.get()
            if item is None:
                return
            if isinstance(item, OSError):
                raise item
            yield item
    finally:
        os.write(wake_write, b"\0")
        thread.join()
        os.close(wake_read)
        os.close(wake_write)
