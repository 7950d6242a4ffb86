"""``ReactLoopAgent``: the agent handle the loop drives (SPEC §8.4).

The handle queues work (``send``/``steer``/``inject``), stops it (``abort``/``cancel``)
and reports quiescence (``when_idle``); :mod:`dsh.agent_loop.loop` does the driving.
The run state both sides share lives in one :class:`~dsh.agent_loop.state.LoopState`
(:attr:`ReactLoopAgent.state`), which the handle creates and hands to the driver.
Ownership: the agent's driver task and its fire-and-forget flushes belong to the
agent; the disposer returned by :meth:`start` stops the agent and its awaitable
settles when the driver has exited.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine, Sequence
from typing import Any

from dsh.agent_loop.inbox import Inbox, InboxMessage
from dsh.agent_loop.loop import run_loop
from dsh.agent_loop.state import DEFAULT_SETTINGS, LoopSettings, LoopState
from dsh.core.agent import AGENT_QUEUED, AgentOptions, AgentStatus, QueuedInfo
from dsh.core.errors import HarnessError, error_message, to_error
from dsh.core.llm import ContentBlock, MessageSource, UserSource
from dsh.core.session import (
    SESSION_FLUSH,
    CompletedReason,
    ContextMessageEvent,
    InjectionTrigger,
    MessageData,
    Session,
    TurnEndData,
    TurnEndEvent,
    TurnStartData,
    TurnStartEvent,
    is_turn_open,
    last_turn_number,
)
from dsh.kernel import Context

_USER = UserSource()
"""The default source (immutable, so one value serves every message)."""


async def _nothing() -> None:
    return None


class ReactLoopAgent:
    """A ReAct-style agent on one session; see the module docstring.

    ``ctx`` is the context it acts through (the creator's): events are emitted and
    services reached through it. ``settings`` are the loop-wide limits; raises
    ``HarnessError`` (INVALID_OPTIONS) for a step limit below 1.
    """

    def __init__(
        self,
        ctx: Context,
        agent_id: str,
        options: AgentOptions,
        session: Session,
        settings: LoopSettings = DEFAULT_SETTINGS,
    ) -> None:
        self.state = LoopState(ctx, agent_id, options, session, self, settings)
        self._done: asyncio.Future[None] | None = None
        self._background: set[asyncio.Task[None]] = set()

    # ------------------------------------------------------------------ state
    @property
    def ctx(self) -> Context:
        return self.state.ctx

    @property
    def id(self) -> str:
        return self.state.id

    @property
    def options(self) -> AgentOptions:
        return self.state.options

    @property
    def session(self) -> Session:
        return self.state.session

    @property
    def inbox(self) -> Inbox:
        return self.state.inbox

    @property
    def status(self) -> AgentStatus:
        return self.state.status

    def is_disposed(self) -> bool:
        """True once the agent has been stopped (a method so checks are never cached)."""
        return self.state.is_disposed()

    def is_cancel_requested(self) -> bool:
        """True while a ``cancel()`` is armed for the current loop iteration."""
        return self.state.is_cancel_requested()

    # ------------------------------------------------------------------ input
    def _assert_live(self) -> None:
        if self.state.disposed:
            raise HarnessError(f'agent "{self.id}" is disposed', "DISPOSED")

    def send(self, content: Sequence[ContentBlock], *, source: MessageSource | None = None) -> None:
        """Queue a user message; it starts a turn when idle, else joins the next one."""
        self._assert_live()
        self._queue(tuple(content), source if source is not None else _USER, steering=False)

    def steer(self, content: Sequence[ContentBlock], *, source: MessageSource | None = None) -> None:
        """Inject between steps of the running turn; when not running, same as :meth:`send`."""
        self._assert_live()
        self._queue(tuple(content), source if source is not None else _USER, steering=self.state.status == "running")

    def _queue(self, content: tuple[ContentBlock, ...], source: MessageSource, *, steering: bool) -> None:
        message = InboxMessage(content, source)
        if steering:
            self.state.inbox.steer(message)
        else:
            self.state.inbox.enqueue(message)
        self.ctx.emit(AGENT_QUEUED, self, content, QueuedInfo(source=source, steering=steering))

    def inject(self, content: Sequence[ContentBlock], *, source: MessageSource | None = None) -> None:
        """Append a ``context/message`` without running the model.

        Inside the open turn when the log has one; otherwise wrapped in a one-shot
        ``injection`` turn that is closed and checkpointed even if an append raises.
        """
        self._assert_live()
        resolved = source if source is not None else _USER
        data = MessageData(content=tuple(content), source=resolved)
        session = self.session
        if is_turn_open(session):
            session.append(ContextMessageEvent, data)
            return
        turn = last_turn_number(session) + 1
        try:
            session.append(TurnStartEvent, TurnStartData(turn=turn, trigger=InjectionTrigger(source=resolved)))
            session.append(ContextMessageEvent, data)
        finally:
            if is_turn_open(session):
                try:
                    session.append(TurnEndEvent, TurnEndData(turn=turn, reason=CompletedReason()))
                except Exception:  # the event is already in the log; a listener threw
                    pass
            if last_turn_number(session) == turn:
                self._spawn(self._flush_injection(turn))

    async def _flush_injection(self, turn: int) -> None:
        try:
            await self.ctx.parallel(SESSION_FLUSH, self.session)
        except Exception as caught:
            error = to_error(caught)
            self.ctx.logger.warn('agent "%s": flush after idle injection failed: %s', self.id, error_message(error))
            self.state.report_error(turn, 0, error)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ------------------------------------------------------------------ control
    def abort(self, reason: str | None = None) -> None:
        """Abort the step in flight (only); the turn ends ``aborted``."""
        controller = self.state.current_abort
        if controller is not None:
            controller.abort(reason if reason is not None else "aborted")

    def cancel(self, reason: str | None = None) -> None:
        """Drop queued and steering work, abort the step in flight, drop a turn about to start.

        Idle with nothing pending is a no-op (the marker is not armed).
        """
        state = self.state
        inbox = state.inbox
        if state.status == "running" or state.current_abort is not None or inbox.has_queued() or inbox.has_steering():
            state.cancel_requested = True
        inbox.clear()
        if state.current_abort is not None:
            state.current_abort.abort(reason if reason is not None else "cancelled")

    def when_idle(self) -> Coroutine[Any, Any, None]:
        """Return once the agent is quiescent after leaving ``running``.

        The waiter is registered when this is *called* (not when awaited), so a
        waiter taken before a ``cancel()`` is settled by it. Immediate when idle with
        nothing queued; on a disposed agent, waits for the driver to exit.
        """
        state = self.state
        if state.disposed:
            return self._wait_done()
        if state.status != "running" and not state.inbox.has_queued():
            return _nothing()
        return self._await_idle(state.add_idle_waiter())

    async def _await_idle(self, waiter: asyncio.Future[bool]) -> None:
        if await waiter:
            await self._wait_done()

    async def _wait_done(self) -> None:
        if self._done is not None:
            await asyncio.shield(self._done)

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> Any:
        """Launch the driver; return the infallible, idempotent stop disposer."""
        self.state.disposed_future  # noqa: B018 - bind the future to the running loop now
        self._done = asyncio.get_running_loop().create_task(run_loop(self.state), name=f"agent {self.id}")
        return self.stop

    def stop(self) -> Awaitable[None]:
        """Dispose the agent: status ``disposed`` at once, abort the step; await the driver's exit."""
        state = self.state
        if not state.disposed:
            state.disposed = True
            state.status = "disposed"
            state.disposed_future.set_result(None)
            state.settle_idle(disposed=True)
            if state.current_abort is not None:
                state.current_abort.abort("disposed")
            state.emit_status("disposed")
        return self._drain()

    async def _drain(self) -> None:
        await self._wait_done()
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)
