"""``LoopState``: the one owner of an agent's run state, shared by the handle and the driver.

The handle (:class:`~dsh.agent_loop.agent.ReactLoopAgent`) writes the requests a
caller makes (queue, cancel, dispose); the driver (:mod:`dsh.agent_loop.loop`) reads
them and writes what it is doing (the status, the step's abort controller). Both go
through this object, so neither module imports the other: ``agent`` imports ``loop``
and both import ``state``.

``handle`` is the public agent the state belongs to: every ``agent/*`` event carries
it, and tools see it as ``ToolExecution.agent``.

:class:`LoopSettings` are the loop-wide settings (the ``agent-loop`` plugin's
config) an agent runs under; the agent's own options win where both say something.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from dsh.agent_loop.inbox import Inbox
from dsh.core.agent import AGENT_ERROR, AGENT_STATUS, Agent, AgentOptions, AgentStatus
from dsh.core.errors import HarnessError
from dsh.core.session import Session
from dsh.kernel import AbortController, Context

DEFAULT_MAX_PARALLEL_TOOL_CALLS = 8
"""How many concurrency-safe tool calls of one step run at once unless configured."""


@dataclass(frozen=True, slots=True)
class LoopSettings:
    """Loop-wide limits: ``max_steps`` per turn (None: no limit) and the tool-call pool size."""

    max_steps: int | None = None
    max_parallel_tool_calls: int = DEFAULT_MAX_PARALLEL_TOOL_CALLS


DEFAULT_SETTINGS = LoopSettings()


def _step_limit(agent_id: str, options: AgentOptions, settings: LoopSettings) -> int | None:
    """The agent's step limit: its option, else the loop's; raise INVALID_OPTIONS for one below 1."""
    limit = options.max_steps if options.max_steps is not None else settings.max_steps
    if limit is not None and (type(limit) is not int or limit < 1):
        raise HarnessError(
            f'agent "{agent_id}": max_steps must be a whole number of at least 1 (or None for no limit), got {limit!r}',
            "INVALID_OPTIONS",
        )
    return limit


class LoopState:
    """What one agent is doing and has been asked to do; see the module docstring."""

    __slots__ = (
        "_disposed_future",
        "_idle_waiters",
        "cancel_requested",
        "ctx",
        "current_abort",
        "disposed",
        "handle",
        "id",
        "inbox",
        "max_parallel",
        "max_steps",
        "options",
        "session",
        "status",
    )

    def __init__(
        self,
        ctx: Context,
        agent_id: str,
        options: AgentOptions,
        session: Session,
        handle: Agent,
        settings: LoopSettings = DEFAULT_SETTINGS,
    ) -> None:
        self.ctx = ctx
        self.id = agent_id
        self.options = options
        self.max_steps = _step_limit(agent_id, options, settings)
        """Steps per turn before it ends ``max-steps`` (None: no limit)."""
        self.max_parallel = settings.max_parallel_tool_calls
        """How many concurrency-safe tool calls of a step run at once."""
        self.session = session
        self.handle = handle
        self.inbox = Inbox()
        self.status: AgentStatus = "idle"
        self.current_abort: AbortController | None = None
        """The abort controller of the step in flight (None between steps)."""
        self.cancel_requested = False
        """A ``cancel()`` armed for the current loop iteration."""
        self.disposed = False
        self._disposed_future: asyncio.Future[None] | None = None
        self._idle_waiters: list[asyncio.Future[bool]] = []

    def is_disposed(self) -> bool:
        """True once the agent has been stopped (a method, so a check is never narrowed away)."""
        return self.disposed

    def is_cancel_requested(self) -> bool:
        """True while a ``cancel()`` is armed for the current loop iteration."""
        return self.cancel_requested

    @property
    def disposed_future(self) -> asyncio.Future[None]:
        """Completes when the agent is disposed (made on first use, on the running loop)."""
        if self._disposed_future is None:
            self._disposed_future = asyncio.get_running_loop().create_future()
        return self._disposed_future

    def set_status(self, status: AgentStatus) -> None:
        """Flip the status and emit ``agent/status``; no-op if unchanged or disposed.

        Idle waiters are settled before the event fires; a throwing listener is logged.
        """
        if status == self.status or self.status == "disposed":
            return
        self.status = status
        if status != "running":
            self.settle_idle()
        self.emit_status(status)

    def emit_status(self, status: AgentStatus) -> None:
        """Emit ``agent/status`` with ``status``, containing a throwing listener."""
        try:
            self.ctx.emit(AGENT_STATUS, self.handle, status)
        except Exception as error:
            self.ctx.logger.warn('agent "%s": agent/status listener threw on %s: %s', self.id, status, error)

    def add_idle_waiter(self) -> asyncio.Future[bool]:
        """A future settled at the next quiescence: True when it came from disposal."""
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._idle_waiters.append(waiter)
        return waiter

    def settle_idle(self, disposed: bool = False) -> None:
        """Settle every idle waiter taken so far with ``disposed``."""
        waiters, self._idle_waiters = self._idle_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(disposed)

    def report_error(self, turn: int, step: int, error: BaseException) -> None:
        """Emit ``agent/error``, containing a throwing listener."""
        try:
            self.ctx.emit(AGENT_ERROR, self.handle, turn, step, error)
        except Exception as listener_error:
            self.ctx.logger.warn('agent "%s": agent/error listener threw: %s', self.id, listener_error)
