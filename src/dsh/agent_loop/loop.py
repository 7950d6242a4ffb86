"""The driver: turns queued messages into turns of model steps and tool calls (SPEC §8.5).

Containment: a throwing plugin ends the *turn*, never the loop. Each turn has three
idempotent finalizers (:meth:`TurnRun.close_step`, :meth:`TurnRun.fail_turn`,
:meth:`TurnRun.close_turn`) so that whatever throws where, every ``turn/start`` gets
exactly one ``turn/end``, an open step is closed before it, and a failed turn reports
exactly one ``error`` event and one ``agent/error``. "Turn started" is read from the
log, because ``Session.append`` stores an event before its listeners can throw.

Cancellation: the step's :class:`AbortController` is the source of truth for why
work stopped (see :mod:`dsh.agent_loop.race`).

Limits: a turn that has run ``state.max_steps`` steps and would run another (the
model called tools, steering arrived, or a continuation listener asked for more)
ends with reason ``max-steps`` instead; the limit is checked after the
continuation decision, so a turn that stops on its own at the limit is ``completed``.

The driver works on the agent's :class:`~dsh.agent_loop.state.LoopState`, never on
the agent handle itself; events carry ``state.handle``.
"""

from __future__ import annotations

from dsh.agent_loop.race import abort_reason
from dsh.agent_loop.state import LoopState
from dsh.agent_loop.step import StepOutcome, constant, run_step, settle
from dsh.core.agent import (
    AGENT_STEERING,
    AGENT_STEP_END,
    AGENT_STEP_START,
    AGENT_TURN_CONTINUATION,
    AGENT_TURN_END,
    AGENT_TURN_START,
    EndTurn,
)
from dsh.core.errors import HarnessError, error_code, error_message, to_error
from dsh.core.llm import UNSET, MaxTokensFinish
from dsh.core.redact import redact_secrets
from dsh.core.session import (
    SESSION_CHECKPOINT,
    SESSION_FLUSH,
    AbortedReason,
    CompletedReason,
    DisposedReason,
    ErrorData,
    ErrorEvent,
    ErrorReason,
    MaxStepsReason,
    MaxTokensReason,
    MessageData,
    MessageTrigger,
    SteeringMessageData,
    SteeringMessageEvent,
    StepData,
    StepEndEvent,
    StepStartEvent,
    TurnEndData,
    TurnEndEvent,
    TurnEndReason,
    TurnStartData,
    TurnStartEvent,
    UserMessageEvent,
    last_turn_number,
)
from dsh.kernel import AbortController

_COMPLETED = CompletedReason()
_DISPOSED = DisposedReason()
_MAX_TOKENS = MaxTokensReason()
_MAX_STEPS = MaxStepsReason()
_CANCELLED = AbortedReason(reason="cancelled")


def error_reason(error: BaseException) -> ErrorReason:
    """The turn-end reason for ``error``: its message, plus ``code`` when it has a string one.

    The message is passed through :func:`redact_secrets` first: it is stored in the session log.
    """
    code = error_code(error)
    return ErrorReason(message=redact_secrets(error_message(error)), code=UNSET if code is None else code)


class TurnRun:
    """One turn: its state and the idempotent finalizers."""

    def __init__(self, state: LoopState, turn: int) -> None:
        self.state = state
        self.turn = turn
        self.reason: TurnEndReason = _COMPLETED
        self.step = 0
        self.turn_ended = False
        self.step_open = False
        self.error_reported = False

    # -------------------------------------------------------------- finalizers
    def close_step(self) -> bool:
        """Close an open step; True when closing it failed the turn (the caller must stop)."""
        if not self.step_open:
            return False
        self.step_open = False
        state = self.state
        failure: BaseException | None = None
        try:
            state.session.append(StepEndEvent, StepData(turn=self.turn, step=self.step))
        except Exception as error:
            failure = error
        try:
            state.ctx.emit(AGENT_STEP_END, state.handle, self.turn, self.step)
        except Exception as error:
            failure = failure or error
        if failure is not None:
            self.fail_turn(to_error(failure))
            return True
        return False

    def fail_turn(self, error: BaseException) -> None:
        """Record the turn's one failure: ``error`` event (if still open) and ``agent/error``."""
        if self.error_reported:
            return
        self.error_reported = True
        state = self.state
        if not self.turn_ended:
            reason = error_reason(error)
            self.reason = reason
            try:
                state.session.append(
                    ErrorEvent, ErrorData(turn=self.turn, step=self.step, message=reason.message, code=reason.code)
                )
            except Exception as listener_error:
                state.ctx.logger.warn(
                    'agent "%s": session/event listener threw on the error event at turn %s: %s',
                    state.id,
                    self.turn,
                    listener_error,
                )
        else:
            state.ctx.logger.warn(
                'agent "%s": agent/turn-end listener threw after turn %s closed: %s',
                state.id,
                self.turn,
                error_message(error),
            )
        state.report_error(self.turn, self.step, error)

    def close_turn(self, emit: bool) -> None:
        """Append ``turn/end`` once; with ``emit``, fire ``agent/turn-end`` (uncaught)."""
        if self.turn_ended:
            return
        self.turn_ended = True
        state = self.state
        try:
            state.session.append(TurnEndEvent, TurnEndData(turn=self.turn, reason=self.reason))
        except Exception as error:
            state.ctx.logger.warn(
                'agent "%s": session/event listener threw on turn/end at turn %s: %s',
                state.id,
                self.turn,
                error,
            )
        if emit:
            state.ctx.emit(AGENT_TURN_END, state.handle, self.turn, self.reason)

    # -------------------------------------------------------------------- turn
    def _turn_logged(self) -> bool:
        for event in reversed(self.state.session.events):
            if type(event) is TurnStartEvent and event.data.turn == self.turn:
                return True
        return False

    def drain_steering(self) -> bool:
        state = self.state
        steered = state.inbox.drain_steering()
        for message in steered:
            state.session.append(
                SteeringMessageEvent,
                SteeringMessageData(turn=self.turn, content=message.content, source=message.source),
            )
            state.ctx.emit(AGENT_STEERING, state.handle, self.turn, message.content, message.source)
        return bool(steered)

    async def run(self) -> None:
        state = self.state
        queued = state.inbox.drain_queued()
        if not queued:
            raise HarnessError("runTurn invariant violated: no queued message at turn start", "INVARIANT")
        turn = self.turn
        session = state.session
        try:
            session.append(TurnStartEvent, TurnStartData(turn=turn, trigger=MessageTrigger(source=queued[0].source)))
            for message in queued:
                session.append(UserMessageEvent, MessageData(content=message.content, source=message.source))
            state.ctx.emit(AGENT_TURN_START, state.handle, turn)
            await self._steps()
            self.close_turn(emit=True)
        except Exception as caught:
            if not self._turn_logged():
                raise
            self.close_step()
            if state.is_disposed() and not self.error_reported:
                self.reason = _DISPOSED
            else:
                self.fail_turn(to_error(caught))
            self.close_turn(emit=False)
        try:
            await state.ctx.parallel(SESSION_FLUSH, session)
        except Exception as caught:
            error = to_error(caught)
            state.ctx.logger.warn(
                'agent "%s": session/flush failed at turn %s: %s', state.id, turn, error_message(error)
            )
            state.report_error(turn, self.step, error)

    async def _steps(self) -> None:
        state = self.state
        ctx = state.ctx
        turn = self.turn
        while True:
            self.step += 1
            step = self.step
            self.drain_steering()
            state.session.append(StepStartEvent, StepData(turn=turn, step=step))
            self.step_open = True
            try:
                ctx.emit(AGENT_STEP_START, state.handle, turn, step)
            except EndTurn as stop:  # a policy plugin ends the turn with its own reason
                self.reason = stop.reason
                self.close_step()
                return
            controller = AbortController()
            state.current_abort = controller
            if state.is_cancel_requested():
                state.current_abort = None
                self.reason = _CANCELLED
                self.close_step()
                return
            outcome: StepOutcome | BaseException
            try:
                await ctx.parallel(SESSION_CHECKPOINT, state.session)  # the user's words and earlier steps
                outcome = await run_step(state, turn, step, controller.signal)
            except Exception as error:
                outcome = to_error(error)
            finally:
                state.current_abort = None
            if isinstance(outcome, BaseException):
                self.close_step()
                if state.is_disposed():
                    self.reason = _DISPOSED
                elif controller.signal.aborted:
                    self.reason = AbortedReason(reason=abort_reason(controller.signal))
                else:
                    self.fail_turn(outcome)
                return
            if type(outcome.finish) is MaxTokensFinish:
                self.reason = _MAX_TOKENS
            steered = self.drain_steering()
            if self.close_step():
                return
            default = outcome.had_tool_calls or steered
            cont = default
            if ctx.listener_count(AGENT_TURN_CONTINUATION):
                try:
                    decision = await settle(
                        ctx.waterfall(AGENT_TURN_CONTINUATION, state.handle, turn, default, inner=constant(default))
                    )
                except Exception as error:
                    self.fail_turn(to_error(error))
                    return
                cont = bool(decision)
            if not cont and state.inbox.has_steering():
                cont = True
            if state.is_cancel_requested():
                self.reason = _CANCELLED
                return
            if not cont or state.is_disposed():
                if state.is_disposed():
                    self.reason = _DISPOSED
                return
            limit = state.max_steps
            if limit is not None and step >= limit:
                self.reason = _MAX_STEPS
                return


async def run_loop(state: LoopState) -> None:
    """The agent's driver task: wait for work, run turns, until the agent is disposed."""
    inbox = state.inbox
    disposed = state.disposed_future
    while not state.is_disposed():
        await inbox.wait_for_queued(disposed)
        if state.is_disposed():
            break
        if state.is_cancel_requested():
            state.cancel_requested = False
            state.settle_idle()
            continue
        if not inbox.has_queued():  # a kept wake-up whose messages were already taken
            continue
        state.set_status("running")
        if state.is_cancel_requested():
            state.cancel_requested = False
            state.set_status("idle")
            continue
        turn = last_turn_number(state.session) + 1
        try:
            await TurnRun(state, turn).run()
        except Exception as caught:
            error = to_error(caught)
            state.ctx.logger.warn(
                'agent "%s": turn %s failed before it started: %s', state.id, turn, error_message(error)
            )
            state.report_error(turn, 0, error)
        state.cancel_requested = False
        for message in inbox.drain_steering():
            inbox.enqueue(message)
        if not inbox.has_queued():
            state.set_status("idle")
