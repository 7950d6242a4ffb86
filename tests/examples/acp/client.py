"""A raw ACP client over a child process's pipes, keeping every stdout byte.

:class:`PipeClient` drives a spawned server: it writes JSON-RPC requests and
notifications to the child's stdin and reads its stdout, teeing the raw bytes into
:attr:`PipeClient.raw` (decoded once, at the end, for the goldens) while parsing
complete lines for itself. It never judges a line: one that is not JSON is kept in
:attr:`PipeClient.bad_lines` and left for the purity check of the normalizer.
stderr is drained into :attr:`PipeClient.stderr` so a chatty server never blocks.

Waiting is event-driven (:meth:`PipeClient.wait_for`); a request still pending when
stdout ends fails with :class:`ServerGoneError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Callable
from typing import Any

from tests.examples.acp.normalize import dump


class RpcError(Exception):
    """An error response; ``error`` is its ``{"code", "message"[, "data"]}`` object."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(f"{error.get('code')}: {error.get('message')}")
        self.error = error


class ServerGoneError(Exception):
    """stdout ended while a request was still waiting for its answer."""


class PipeClient:
    """See the module docstring. Build it with the spawned process; :meth:`start` once."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        self.process = process
        self.raw = bytearray()
        self.stderr = bytearray()
        self.frames: list[dict[str, Any]] = []
        self.bad_lines: list[bytes] = []
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._changed = asyncio.Event()
        self._eof = False
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [
            asyncio.ensure_future(self._read_stdout()),
            asyncio.ensure_future(self._drain_stderr()),
        ]

    @property
    def updates(self) -> list[dict[str, Any]]:
        """The ``update`` objects of every ``session/update`` notification so far, in order."""
        return [
            frame["params"]["update"]
            for frame in self.frames
            if frame.get("method") == "session/update" and isinstance(frame.get("params"), dict)
        ]

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", errors="replace")

    # ------------------------------------------------------------------ reading
    async def _read_stdout(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        pending = b""
        while data := await stream.read(65536):
            self.raw.extend(data)
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self._receive(line)
        if pending:
            self._receive(pending)
        self._eof = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ServerGoneError(f"the server closed stdout; stderr:\n{self.stderr_text[-2000:]}"))
        self._pending.clear()
        self._changed.set()

    async def _drain_stderr(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        while data := await stream.read(65536):
            self.stderr.extend(data)

    def _receive(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            frame = json.loads(line)
        except ValueError:
            self.bad_lines.append(line)
            return
        if not isinstance(frame, dict):
            self.bad_lines.append(line)
            return
        self.frames.append(frame)
        future = self._pending.pop(frame["id"], None) if "method" not in frame and "id" in frame else None
        if future is not None and not future.done():
            if "error" in frame:
                future.set_exception(RpcError(frame["error"]))
            else:
                future.set_result(frame.get("result"))
        self._changed.set()

    async def wait_for(self, ready: Callable[[], bool]) -> None:
        """Return once ``ready()`` holds (checked after every frame); raise if stdout ends first."""
        while not ready():
            if self._eof:
                raise ServerGoneError(f"stdout ended before the awaited state; stderr:\n{self.stderr_text[-2000:]}")
            self._changed.clear()
            await self._changed.wait()

    async def wait_eof(self) -> None:
        """Return once the server's stdout has ended and both pipes are drained."""
        await asyncio.gather(*self._tasks)

    # ------------------------------------------------------------------ writing
    def send_line(self, line: str | bytes) -> None:
        """Write one raw line (the newline is added)."""
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write((line.encode("utf-8") if isinstance(line, str) else line) + b"\n")

    def request_nowait(self, method: str, params: Any) -> asyncio.Future[Any]:
        """Send a request; the returned future resolves with its result (or raises :class:`RpcError`)."""
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self._eof:
            future.set_exception(ServerGoneError("the server closed stdout"))
            return future
        self._pending[request_id] = future
        self.send_line(dump({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}))
        return future

    async def request(self, method: str, params: Any) -> Any:
        """Send a request and wait for its result."""
        return await self.request_nowait(method, params)

    def notify(self, method: str, params: Any) -> None:
        self.send_line(dump({"jsonrpc": "2.0", "method": method, "params": params}))

    async def close_stdin(self) -> None:
        """End the server's input (it then shuts down)."""
        stdin = self.process.stdin
        assert stdin is not None
        stdin.close()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the server may be gone already
            await stdin.wait_closed()
