"""A small ACP client for the bridge tests: requests, notifications, recorded frames.

It speaks over the client end of :func:`dsh.acp.memory_transport_pair`. Every frame
the server writes is kept in ``frames`` (in arrival order); ``session/update``
notifications are also kept in ``updates`` (the update objects) and
``session_updates`` (``(sessionId, update)``). Waiting is event-driven: ``wait_for``
returns once a recorded frame satisfies a predicate.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from dsh.acp import MemoryTransport


class RpcResponseError(Exception):
    """An error response: ``code``, ``message`` and (when sent) ``data``."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error["message"])
        self.error = error
        self.code: int = error["code"]
        self.message: str = error["message"]

    @property
    def has_data(self) -> bool:
        return "data" in self.error


class AcpTestClient:
    """See the module docstring. Call :meth:`start` once, :meth:`aclose` at the end."""

    def __init__(self, transport: MemoryTransport) -> None:
        self.transport = transport
        self.frames: list[dict[str, Any]] = []
        self.raw_lines: list[str] = []
        self.updates: list[dict[str, Any]] = []
        self.session_updates: list[tuple[str, dict[str, Any]]] = []
        self._next_id = 0
        self._pending: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._changed = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        self.on_update: Callable[[dict[str, Any]], None] | None = None

    def start(self) -> None:
        self._reader = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        while True:
            line = await self.transport.read_line()
            if line is None:
                break
            self.raw_lines.append(line)
            frame = json.loads(line)
            self.frames.append(frame)
            if frame.get("method") == "session/update":
                params = frame["params"]
                self.updates.append(params["update"])
                self.session_updates.append((params["sessionId"], params["update"]))
                if self.on_update is not None:
                    try:
                        self.on_update(params["update"])
                    except Exception:  # a client-side failure never reaches the server
                        pass
            elif "id" in frame and "method" not in frame:  # a request from the server is no answer
                future = self._pending.pop(frame["id"], None)
                if future is not None and not future.done():
                    future.set_result(frame)
            self._changed.set()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionError("the server closed the connection"))
        self._pending.clear()
        self._changed.set()

    # ---------------------------------------------------------------- sending
    def send(self, method: str, params: Any = None) -> asyncio.Future[dict[str, Any]]:
        """Send a request now; the future resolves with the raw response frame."""
        self._next_id += 1
        request_id = self._next_id
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.transport.write_line(json.dumps(message))
        return future

    async def request(self, method: str, params: Any = None) -> Any:
        """Send a request and return its result; an error response raises :class:`RpcResponseError`."""
        return result_of(await self.send(method, params))

    def notify(self, method: str, params: Any) -> None:
        self.transport.write_line(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}))

    def write_raw(self, line: str) -> None:
        self.transport.write_line(line)

    # ----------------------------------------------------------- ACP shortcuts
    async def initialize(self, terminal_output: bool = False, version: int = 1) -> Any:
        capabilities: dict[str, Any] = {}
        if terminal_output:
            capabilities["_meta"] = {"terminal_output": True}
        return await self.request("initialize", {"protocolVersion": version, "clientCapabilities": capabilities})

    async def new_session(self, cwd: str, **extra: Any) -> str:
        result = await self.request("session/new", {"cwd": cwd, "mcpServers": [], **extra})
        session_id: str = result["sessionId"]
        return session_id

    def prompt_future(self, session_id: str, text: str) -> asyncio.Future[dict[str, Any]]:
        return self.send("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})

    async def prompt(self, session_id: str, text: str) -> Any:
        return result_of(await self.prompt_future(session_id, text))

    def cancel(self, session_id: str) -> None:
        self.notify("session/cancel", {"sessionId": session_id})

    async def load_session(self, session_id: str, cwd: str) -> Any:
        return await self.request("session/load", {"sessionId": session_id, "cwd": cwd, "mcpServers": []})

    # ---------------------------------------------------------------- waiting
    async def wait_for(self, predicate: Callable[[AcpTestClient], bool]) -> None:
        """Return once ``predicate(self)`` holds (re-checked after every received frame)."""
        while not predicate(self):
            if self._reader is not None and self._reader.done():
                raise AssertionError("the server closed the connection before the condition held")
            self._changed.clear()
            await self._changed.wait()

    def close(self) -> None:
        """Close the client's output: the server reads end of input (an editor disconnect)."""
        self.transport.close()

    async def aclose(self) -> None:
        """Close the output and wait until the server has closed its side too."""
        self.close()
        if self._reader is not None:
            await asyncio.wait({self._reader})


def result_of(frame: dict[str, Any]) -> Any:
    """The result of a response frame; an error frame raises :class:`RpcResponseError`."""
    if "error" in frame:
        raise RpcResponseError(frame["error"])
    return frame["result"]


def message_text(updates: list[dict[str, Any]], kind: str = "agent_message_chunk") -> str:
    """The joined text of every ``kind`` update."""
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == kind)
