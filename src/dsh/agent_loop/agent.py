"""``ReactLoopAgent``: the agent handle the loop drives (SPEC §8.4).

The handle queues work (``send``/``steer``/``inject``), stops it (``abort``/``cancel``)
and reports quiescence (``when_idle``); :mod:`dsh.agent_loop.loop` does the driving.
Ownership: the agent's driver task and its fire-and-forget flushes belong to the
agent; the disposer returned by :meth:`start` stops the agent and its awaitable
settles when the driver has exited.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine
from typing import Any

from dsh.agent_loop.inbox import Inbox, InboxMessage
from dsh.agent_loop.loop import run_loop
from dsh.core.agent import AGENT_ERROR, AGENT_QUEUED, AGENT_STATUS, AgentOptions, AgentStatus
from dsh.core.errors import HarnessError, error_message, to_error
from dsh.core.llm import ContentBlock, MessageSource
from dsh.core.session import SESSION_FLUSH, Session, is_turn_open, last_turn_number
from dsh.kernel import AbortController, Context


def _user_source() -> MessageSource:
    """A fresh default source: listeners receive it, so one object must never be shared."""
    return {"kind": "user"}


async def _nothing() -> None:
    return None


class ReactLoopAgent:
    """A ReAct-style agent on one session; see the module docstring.

    ``ctx`` is the context it acts through (the creator's): events are emitted and
    services reached through it.
    """

    def __init__(self, ctx: Context, agent_id: str, options: AgentOptions, session: Session) -> None:
        self.ctx = ctx
        self.id = agent_id
        self.options = options
        self.session = session
        self.inbox = Inbox()
        self._status: AgentStatus = "idle"
        self.current_abort: AbortController | None = None
        self.cancel_requested = False
        self._is_disposed = False
        self._disposed: asyncio.Future[None] | None = None
        self._done: asyncio.Future[None] | None = None
        self._idle_waiters: list[asyncio.Future[bool]] = []
        self._background: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ state
    @property
    def status(self) -> AgentStatus:
        return self._status

    @property
    def disposed_future(self) -> asyncio.Future[None]:
        if self._disposed is None:
            self._disposed = asyncio.get_running_loop().create_future()
        return self._disposed

    def set_status(self, status: AgentStatus) -> None:
        """Flip the status and emit ``agent/status``; no-op if unchanged or disposed.

        Idle waiters are settled before the event fires; a throwing listener is logged.
        """
        if status == self._status or self._status == "disposed":
            return
        self._status = status
        if status != "running":
            self.settle_idle()
        try:
            self.ctx.emit(AGENT_STATUS, self, status)
        except Exception as error:
            self.ctx.logger.warn('agent "%s": agent/status listener threw on %s: %s', self.id, status, error)

    def settle_idle(self, disposed: bool = False) -> None:
        waiters, self._idle_waiters = self._idle_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(disposed)

    # ------------------------------------------------------------------ input
    def is_disposed(self) -> bool:
        """True once the agent has been stopped (a method so checks are never cached)."""
        return self._is_disposed

    def is_cancel_requested(self) -> bool:
        """True while a ``cancel()`` is armed for the current loop iteration."""
        return self.cancel_requested

    def _assert_live(self) -> None:
        if self._is_disposed:
            raise HarnessError(f'agent "{self.id}" is disposed', "DISPOSED")

    def send(self, content: list[ContentBlock], *, source: MessageSource | None = None) -> None:
        """Queue a user message; it starts a turn when idle, else joins the next one."""
        self._assert_live()
        resolved = source if source is not None else _user_source()
        self.inbox.enqueue(InboxMessage(content, resolved))
        self.ctx.emit(AGENT_QUEUED, self, content, {"source": resolved, "steering": False})

    def steer(self, content: list[ContentBlock], *, source: MessageSource | None = None) -> None:
        """Inject between steps of the running turn; when not running, same as :meth:`send`."""
        self._assert_live()
        if self._status != "running":
            self.send(content, source=source)
            return
        resolved = source if source is not None else _user_source()
        self.inbox.steer(InboxMessage(content, resolved))
        self.ctx.emit(AGENT_QUEUED, self, content, {"source": resolved, "steering": True})

    def inject(self, content: list[ContentBlock], *, source: MessageSource | None = None) -> None:
        """Append a ``context/message`` without running the model.

        Inside the open turn when the log has one; otherwise wrapped in a one-shot
        ``injection`` turn that is closed and checkpointed even if an append raises.
        """
        self._assert_live()
        resolved = source if source is not None else _user_source()
        session = self.session
        if is_turn_open(session):
            session.append("context/message", {"content": content, "source": resolved})
            return
        turn = last_turn_number(session) + 1
        try:
            session.append("turn/start", {"turn": turn, "trigger": {"kind": "injection", "source": resolved}})
            session.append("context/message", {"content": content, "source": resolved})
        finally:
            if is_turn_open(session):
                try:
                    session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
                except Exception:  # the event is already in the log; a listener threw
                    pass
            if any(e["type"] == "turn/start" and e["data"]["turn"] == turn for e in reversed(session.events)):
                self._spawn(self._flush_injection(turn))

    async def _flush_injection(self, turn: int) -> None:
        try:
            await self.ctx.parallel(SESSION_FLUSH, self.session)
        except Exception as caught:
            error = to_error(caught)
            self.ctx.logger.warn('agent "%s": flush after idle injection failed: %s', self.id, error_message(error))
            self.report_error(turn, 0, error)

    def report_error(self, turn: int, step: int, error: BaseException) -> None:
        """Emit ``agent/error``, containing a throwing listener."""
        try:
            self.ctx.emit(AGENT_ERROR, self, turn, step, error)
        except Exception as listener_error:
            self.ctx.logger.warn('agent "%s": agent/error listener threw: %s', self.id, listener_error)

    def _spawn(self, coro: Any) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ------------------------------------------------------------------ control
    def abort(self, reason: str | None = None) -> None:
        """Abort the step in flight (only); the turn ends ``aborted``."""
        if self.current_abort is not None:
            self.current_abort.abort(reason if reason is not None else "aborted")

    def cancel(self, reason: str | None = None) -> None:
        """Drop queued and steering work, abort the step in flight, drop a turn about to start.

        Idle with nothing pending is a no-op (the marker is not armed).
        """
        if (
            self._status == "running"
            or self.current_abort is not None
            or self.inbox.has_queued()
            or self.inbox.has_steering()
        ):
            self.cancel_requested = True
        self.inbox.clear()
        if self.current_abort is not None:
            self.current_abort.abort(reason if reason is not None else "cancelled")

    def when_idle(self) -> Coroutine[Any, Any, None]:
        """Return once the agent is quiescent after leaving ``running``.

        The waiter is registered when this is *called* (not when awaited), so a
        waiter taken before a ``cancel()`` is settled by it. Immediate when idle with
        nothing queued; on a disposed agent, waits for the driver to exit.
        """
        if self._is_disposed:
            return self._wait_done()
        if self._status != "running" and not self.inbox.has_queued():
            return _nothing()
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._idle_waiters.append(waiter)
        return self._await_idle(waiter)

    async def _await_idle(self, waiter: asyncio.Future[bool]) -> None:
        if await waiter:
            await self._wait_done()

    async def _wait_done(self) -> None:
        if self._done is not None:
            await asyncio.shield(self._done)

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> Any:
        """Launch the driver; return the infallible, idempotent stop disposer."""
        self.disposed_future  # noqa: B018 - bind the future to the running loop now
        self._done = asyncio.get_running_loop().create_task(run_loop(self), name=f"agent {self.id}")
        return self.stop

    def stop(self) -> Awaitable[None]:
        """Dispose the agent: status ``disposed`` at once, abort the step; await the driver's exit."""
        if not self._is_disposed:
            self._is_disposed = True
            self._status = "disposed"
            self.disposed_future.set_result(None)
            self.settle_idle(disposed=True)
            if self.current_abort is not None:
                self.current_abort.abort("disposed")
            try:
                self.ctx.emit(AGENT_STATUS, self, "disposed")
            except Exception as error:
                self.ctx.logger.warn('agent "%s": agent/status listener threw on disposed: %s', self.id, error)
        return self._drain()

    async def _drain(self) -> None:
        await self._wait_done()
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)
