"""A minimal ACP client over a child process's pipes: requests out, responses and updates in.

Just enough JSON-RPC for the benchmark: :meth:`AcpPipe.request` sends one request and
waits for its response, counting the ``session/update`` notifications that arrive
meanwhile. stderr is drained so a chatty server never blocks on a full pipe.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any


class AcpError(Exception):
    """The server answered with an error, or went away before answering."""


class AcpPipe:
    """Drives one spawned ACP server; build it with the process, :meth:`start` once, :meth:`close` once."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.updates = 0
        self.stderr = bytearray()
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [asyncio.ensure_future(self._read()), asyncio.ensure_future(self._drain())]

    async def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while line := await stream.readline():
            frame = json.loads(line)
            if frame.get("method") == "session/update":
                self.updates += 1
            elif "id" in frame and frame["id"] in self._pending:
                future = self._pending.pop(frame["id"])
                if "error" in frame:
                    future.set_exception(AcpError(f"{frame['error']}"))
                else:
                    future.set_result(frame.get("result"))
        for future in self._pending.values():
            future.set_exception(AcpError(f"the server closed stdout: {self.stderr_tail()}"))
        self._pending.clear()

    async def _drain(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        while data := await stream.read(65536):
            self.stderr += data

    def stderr_tail(self) -> str:
        lines = self.stderr.decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else "no stderr"

    async def request(self, method: str, params: dict[str, Any], timeout: float = 120.0) -> Any:
        stdin = self.process.stdin
        assert stdin is not None
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        frame = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        stdin.write(json.dumps(frame).encode() + b"\n")
        await stdin.drain()
        return await asyncio.wait_for(future, timeout)

    async def close(self) -> int:
        """Close stdin (the server's cue to shut down), wait for it and return its exit status."""
        stdin = self.process.stdin
        assert stdin is not None
        stdin.close()
        try:
            code = await asyncio.wait_for(self.process.wait(), 60)
        except TimeoutError:
            self.process.kill()
            code = await self.process.wait()
        await asyncio.gather(*self._tasks)
        return code
