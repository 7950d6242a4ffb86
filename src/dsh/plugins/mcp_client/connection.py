"""One MCP server, supervised: connect, list its tools, serve calls, restart it when it dies.

A :class:`ServerConnection` owns one supervisor task (started by :meth:`start`, ended
by :meth:`stop`). Each generation opens a fresh transport and SDK client: a stdio
server is started as a subprocess in its own process group, an HTTP server is
reached at its URL. When the generation is up, the server's tool list is handed to
``on_tools``; when the connection ends (the process exited, the stream closed), the
supervisor starts a new generation after a backoff, and ``on_tools`` receives the
new list, so the same tools come back under the same names. After too many failed
starts in a row, ``on_down`` withdraws the tools and the server stays down.

**Shutdown.** :meth:`stop` never cancels the supervisor task natively: it cancels the
generation's own cancel scope, so the SDK's shielded shutdown runs (close stdin,
wait, then SIGTERM and SIGKILL to the process group) and no server process outlives
the connection. **Calls** (:meth:`call`) run in the caller's task; cancelling that
task, or firing the call's abort signal, abandons the request and the SDK tells the
server with ``notifications/cancelled``. A call whose connection ends fails with an
error the registry turns into a tool error result.

The SDK (``mcp``) is imported here only when a generation starts, so loading dsh
with no server configured costs nothing.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any, Literal, TextIO, TypeAlias, cast

from dsh.core.errors import HarnessError
from dsh.core.mcp import HttpServer, SseServer, StdioServer
from dsh.kernel import AbortError, AbortSignal
from dsh.plugins.mcp_client.config import McpConfig

if TYPE_CHECKING:
    import mcp_types
    from mcp import Client
    from mcp.client import Transport
    from mcp.client._transport import TransportStreams

ConnectionState: TypeAlias = Literal["starting", "connected", "restarting", "failed", "stopped"]
"""Where a connection is: up (``connected``), between generations, given up, or stopped."""

LIST_PAGES = 100
"""The most ``tools/list`` pages read from one server (a server whose cursor never ends cannot hang a start)."""

CLIENT_NAME = "dsh"


class McpUnavailableError(HarnessError):
    """A call to a server that is not connected right now (code ``MCP_UNAVAILABLE``)."""

    def __init__(self, server: str, state: ConnectionState) -> None:
        how = "has given up after repeated failures" if state == "failed" else f"is {state}"
        super().__init__(
            f'MCP server "{server}" {how}: its tools cannot be called now; try again later, '
            "or check the server's command or URL",
            "MCP_UNAVAILABLE",
        )


class ServerConnection:
    """The supervised connection to the MCP server ``name`` (see the module docstring).

    ``on_tools(tools)`` runs after every successful (re)start with the full list,
    ``on_down()`` once when the supervisor gives up; both run in the supervisor task
    and must not raise (a raise is logged and ends that generation).
    """

    def __init__(
        self,
        name: str,
        spec: StdioServer | HttpServer,
        config: McpConfig,
        *,
        on_tools: Callable[[tuple[mcp_types.Tool, ...]], None],
        on_down: Callable[[], None],
        warn: Callable[[str], None],
    ) -> None:
        self.name = name
        self.spec = spec
        self.config = config
        self.state: ConnectionState = "starting"
        self.generations = 0
        """How many generations connected so far (1 after the first start, 2 after a restart)."""
        self.on_tools = on_tools
        self.on_down = on_down
        self._warn = warn
        self._client: Client | None = None
        self._scope: Any = None
        self._stopping = False
        self._wake = asyncio.Event()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """Start the supervisor task; call it once."""
        self._task = asyncio.get_running_loop().create_task(self._supervise(), name=f"mcp server {self.name}")

    async def stop(self) -> None:
        """Stop the server and return once its process is gone and the supervisor has ended."""
        self._stopping = True
        self._wake.set()
        if self._scope is not None:
            self._scope.cancel()
        if self._task is not None:
            await asyncio.wait({self._task})
        self.state = "stopped"
        self._changed.set()

    @property
    def stopping(self) -> bool:
        """True once :meth:`stop` was called."""
        return self._stopping

    async def wait_started(self) -> ConnectionState:
        """Return the state once the first start has connected or failed (any state but ``starting``)."""
        while self.state == "starting":
            self._changed.clear()
            await self._changed.wait()
        return self.state

    def _set_state(self, state: ConnectionState) -> None:
        self.state = state
        self._changed.set()

    async def _supervise(self) -> None:
        config = self.config
        loop = asyncio.get_running_loop()
        failures = 0
        delay = config.restart_delay
        while True:
            started = loop.time()
            connected_before = self.generations
            try:
                await self._generation()
            except Exception as error:
                self._warn(f'mcp: server "{self.name}" failed: {error_text(error)}')
            self._client = None
            if self._stopping:
                return
            if self.generations > connected_before and loop.time() - started >= config.max_restart_delay:
                failures, delay = 0, config.restart_delay  # it ran long enough: a fresh outage
            failures += 1
            if failures > config.max_restarts:
                self._warn(f'mcp: server "{self.name}" failed {failures} times in a row; its tools are withdrawn')
                self.on_down()
                self._set_state("failed")
                return
            self._set_state("restarting")
            self._wake.clear()
            waiter = asyncio.ensure_future(self._wake.wait())
            await asyncio.wait({waiter}, timeout=delay)
            waiter.cancel()
            await asyncio.wait({waiter})
            if self.stopping:
                return
            delay = min(delay * 2, config.max_restart_delay)

    async def _generation(self) -> None:
        """One connection, from start to its end (or to :meth:`stop`)."""
        import anyio
        import anyio.lowlevel
        from mcp import Client, Implementation

        closed = asyncio.Event()
        with anyio.CancelScope() as scope:
            self._scope = scope
            if self._stopping:
                scope.cancel()
            client = Client(
                _watched(self._transport(), closed),
                mode="auto",
                cache=None,
                read_timeout_seconds=self.config.call_timeout,
                client_info=Implementation(name=CLIENT_NAME, version=_version()),
            )
            # A start that takes too long cancels the whole generation (a scope of its own
            # would have to close before the client's task groups do).
            deadline = asyncio.get_running_loop().call_later(self.config.start_timeout, scope.cancel)
            try:
                async with client:
                    tools = await list_tools(client)
                    deadline.cancel()
                    self._client = client
                    self.generations += 1
                    self._set_state("connected")
                    self.on_tools(tools)
                    await closed.wait()
                    self._client = None
            finally:
                deadline.cancel()
        if scope.cancelled_caught and not self._stopping:
            self._warn(f'mcp: server "{self.name}" did not start within {self.config.start_timeout} s')
        self._scope = None
        await anyio.lowlevel.cancel_shielded_checkpoint()  # resynchronizes coverage on 3.11 (gh-106749)

    def _transport(self) -> Transport:
        spec = self.spec
        if type(spec) is StdioServer:
            from mcp import StdioServerParameters, stdio_client

            params = StdioServerParameters(command=spec.command, args=list(spec.args), env=dict(spec.env), cwd=spec.cwd)
            return stdio_client(params, errlog=server_stderr())
        if type(spec) is SseServer:
            from mcp.client.sse import sse_client

            return sse_client(spec.url, headers=dict(spec.headers), timeout=30.0, sse_read_timeout=300.0)
        assert type(spec) is HttpServer
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        http = httpx2.AsyncClient(headers=spec.headers, timeout=httpx2.Timeout(30.0, read=300.0))
        return _closing(streamable_http_client(spec.url, http_client=http), http)

    # --------------------------------------------------------------------- calls
    async def call(self, tool: str, arguments: dict[str, Any], signal: AbortSignal | None) -> mcp_types.CallToolResult:
        """Call the server's tool ``tool``; see the module docstring for cancel and failure.

        Raises :class:`McpUnavailableError` when no generation is up, and
        :class:`~dsh.kernel.AbortError` when ``signal`` fired first.
        """
        client = self._client
        if client is None:
            raise McpUnavailableError(self.name, self.state)
        work = asyncio.ensure_future(client.call_tool(tool, arguments))
        waiter = asyncio.ensure_future(signal.wait()) if signal is not None else None
        try:
            await asyncio.wait({work} if waiter is None else {work, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if waiter is not None:
                waiter.cancel()
                await asyncio.wait({waiter})
            if not work.done():
                work.cancel()  # the SDK sends notifications/cancelled as the request unwinds
                await asyncio.wait({work})
        if work.cancelled():
            raise AbortError(signal.reason if signal is not None else "cancelled")
        return work.result()


async def list_tools(client: Client) -> tuple[mcp_types.Tool, ...]:
    """Every tool the server lists, page after page (at most :data:`LIST_PAGES`)."""
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tuple(tools)


def error_text(error: BaseException) -> str:
    """A failure's message, looking inside the exception groups the SDK's task groups raise."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(error_text(inner) for inner in error.exceptions)
    return str(error) or type(error).__name__


def server_stderr() -> TextIO:
    """Where a stdio server's stderr goes: dsh's own stderr (a real file), else the null device.

    ``sys.stderr`` may be a stand-in without a file descriptor (a captured or wrapped
    stream); the process's original stderr is used then.
    """
    for stream in (sys.stderr, sys.__stderr__):
        try:
            if stream is not None:
                stream.fileno()
                return stream
        except (AttributeError, OSError, ValueError):
            continue
    return cast(TextIO, subprocess.DEVNULL)  # pragma: no cover - a process started without any stderr


def _version() -> str:
    from dsh import __version__

    return __version__


@asynccontextmanager
async def _watched(transport: Transport, closed: asyncio.Event) -> AsyncIterator[TransportStreams]:
    """``transport``'s streams, with ``closed`` set once the server side of the read stream ends."""
    import anyio
    from mcp.shared.message import SessionMessage

    async with transport as (read, write):
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def pump() -> None:
            try:
                with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                    async with send:
                        async for item in read:
                            await send.send(item)
            finally:
                closed.set()

        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            try:
                async with receive:
                    yield receive, write
            finally:
                group.cancel_scope.cancel()


@asynccontextmanager
async def _closing(transport: Transport, http: Any) -> AsyncIterator[TransportStreams]:
    """``transport`` entered within the HTTP client it uses, which is closed after it."""
    async with http, transport as streams:
        yield streams
