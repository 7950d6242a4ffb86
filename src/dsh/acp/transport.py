"""Line transports for the ACP connection: newline-delimited frames in, frames out.

A :class:`LineTransport` carries one JSON-RPC frame per line. ``write_line`` is
synchronous and enqueues in call order, so frames reach the peer exactly in the
order they were issued; ``read_line`` returns ``None`` once the peer has closed.

* :func:`memory_transport_pair` — two cross-wired in-process ends (tests, embedding);
* :class:`StdioTransport` — this process's stdin/stdout (or any two file
  descriptors): pipes, sockets and terminals are driven by the event loop without
  blocking; a regular file (``dsh acp < requests.jsonl > frames.jsonl``) is read and
  written directly, since that never blocks for long. It works on duplicates of the
  descriptors, so closing it never closes ``sys.stdin``/``sys.stdout`` themselves.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import IO, Final, Protocol

READ_LIMIT = 64 * 1024 * 1024
"""Longest accepted input line from a pipe, in bytes (a longer one is dropped, see :data:`OVERLONG`)."""

OVERLONG: Final = "\x00 a line longer than the read limit was dropped"
"""What :meth:`StdioTransport.read_line` returns for a line longer than :data:`READ_LIMIT`:
the line itself is skipped (never buffered whole) and this text, which is not JSON,
stands for it, so the connection answers it with a parse error and reads on."""


class LineTransport(Protocol):
    """One frame per line, both ways; see the module docstring."""

    async def read_line(self) -> str | None:
        """The next line without its newline, or None at end of input."""
        ...

    def write_line(self, line: str) -> None:
        """Enqueue ``line`` (the transport adds the newline); raise ``ConnectionError`` once closed."""
        ...

    async def aclose(self) -> None:
        """Flush what was enqueued and stop reading and writing; idempotent."""
        ...


class MemoryTransport:
    """One end of an in-process pair (see :func:`memory_transport_pair`).

    :meth:`close` ends this end's output: the peer reads None after the lines
    already sent. This end can still read what the peer writes.
    """

    def __init__(self) -> None:
        self._inbox: asyncio.Queue[str | None] = asyncio.Queue()
        self._peer: MemoryTransport = self
        self._closed = False

    @property
    def closed(self) -> bool:
        """True once this end stopped writing."""
        return self._closed

    async def read_line(self) -> str | None:
        line = await self._inbox.get()
        if line is None:
            self._inbox.put_nowait(None)  # end of input stays the answer
        return line

    def write_line(self, line: str) -> None:
        if self._closed:
            raise ConnectionError("the transport is closed")
        self._peer._inbox.put_nowait(line)

    def close(self) -> None:
        """Stop writing: the peer reads end of input next. Idempotent."""
        if not self._closed:
            self._closed = True
            self._peer._inbox.put_nowait(None)

    async def aclose(self) -> None:
        self.close()


def memory_transport_pair() -> tuple[MemoryTransport, MemoryTransport]:
    """Two cross-wired ends: what one writes, the other reads (``(server, client)`` by convention)."""
    first, second = MemoryTransport(), MemoryTransport()
    first._peer, second._peer = second, first
    return first, second


class _Input(Protocol):
    async def read(self) -> bytes: ...

    def close(self) -> None: ...


class _Output(Protocol):
    def write(self, data: bytes) -> None: ...

    async def close(self) -> None: ...


class _PipeInput:
    def __init__(self, stream: asyncio.StreamReader, pipe: asyncio.BaseTransport) -> None:
        self._stream = stream
        self._pipe = pipe

    async def read(self) -> bytes:
        try:
            return await self._stream.readuntil(b"\n")
        except asyncio.IncompleteReadError as end:  # end of input, maybe after a last unterminated line
            return end.partial
        except asyncio.LimitOverrunError as overrun:
            await self._skip_line(overrun.consumed)
            return OVERLONG.encode()

    async def _skip_line(self, consumed: int) -> None:
        """Drop the rest of an overlong line, ``consumed`` bytes of which are buffered."""
        while True:
            await self._stream.readexactly(consumed)
            try:
                await self._stream.readuntil(b"\n")
            except asyncio.IncompleteReadError:
                return
            except asyncio.LimitOverrunError as overrun:
                consumed = overrun.consumed
            else:
                return

    def close(self) -> None:
        self._pipe.close()


class _FileInput:
    def __init__(self, file: IO[bytes]) -> None:
        self._file = file

    async def read(self) -> bytes:
        return self._file.readline()

    def close(self) -> None:
        self._file.close()


class _WriteProtocol(asyncio.BaseProtocol):
    def __init__(self, lost: asyncio.Future[None]) -> None:
        self.lost = lost

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost.set_result(None)


class _PipeOutput:
    def __init__(self, pipe: asyncio.WriteTransport, lost: asyncio.Future[None]) -> None:
        self._pipe = pipe
        self._lost = lost

    def write(self, data: bytes) -> None:
        if self._pipe.is_closing():  # closed by us, or the reader went away
            raise ConnectionError("the output pipe is closed")
        self._pipe.write(data)

    async def close(self) -> None:
        self._pipe.close()  # flushes the buffer first
        await self._lost


class _FileOutput:
    def __init__(self, file: IO[bytes]) -> None:
        self._file = file

    def write(self, data: bytes) -> None:
        if self._file.closed:
            raise ConnectionError("the output file is closed")
        self._file.write(data)

    async def close(self) -> None:
        self._file.close()


async def _open_input(fd: int) -> _Input:
    file = os.fdopen(os.dup(fd), "rb", buffering=0)
    stream = asyncio.StreamReader(limit=READ_LIMIT)
    try:
        pipe, _ = await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), file)
    except ValueError:  # a regular file: the loop cannot watch it, and reading it never blocks
        return _FileInput(file)
    return _PipeInput(stream, pipe)


async def _open_output(fd: int) -> _Output:
    file = os.fdopen(os.dup(fd), "wb", buffering=0)
    loop = asyncio.get_running_loop()
    lost: asyncio.Future[None] = loop.create_future()
    try:
        pipe, _ = await loop.connect_write_pipe(lambda: _WriteProtocol(lost), file)
    except ValueError:  # a regular file: plain writes
        return _FileOutput(file)
    return _PipeOutput(pipe, lost)


class StdioTransport:
    """NDJSON over two file descriptors; build it with :meth:`open` inside the event loop."""

    def __init__(self, input: _Input, output: _Output) -> None:
        self._input = input
        self._output = output
        self._closed = False

    @classmethod
    async def open(cls, stdin: int | None = None, stdout: int | None = None) -> StdioTransport:
        """Serve ``stdin``/``stdout`` (default: this process's) through duplicated descriptors."""
        input = await _open_input(sys.stdin.fileno() if stdin is None else stdin)
        output = await _open_output(sys.stdout.fileno() if stdout is None else stdout)
        return cls(input, output)

    async def read_line(self) -> str | None:
        data = await self._input.read()
        if not data:
            return None
        return data.decode("utf-8", errors="replace").rstrip("\r\n")

    def write_line(self, line: str) -> None:
        self._output.write(line.encode("utf-8") + b"\n")

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._input.close()
        await self._output.close()
