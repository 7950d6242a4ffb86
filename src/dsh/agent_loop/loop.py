"""The driver: turns queued messages into turns of model steps and tool calls (SPEC §8.5).

Containment: a throwing plugin ends the *turn*, never the loop. Each turn has three
idempotent finalizers (:meth:`TurnRun.close_step`, :meth:`TurnRun.fail_turn`,
:meth:`TurnRun.close_turn`) so that whatever throws where, every ``turn/start`` gets
exactly one ``turn/end``, an open step is closed before it, and a failed turn reports
exactly one ``error`` event and one ``agent/error``. "Turn started" is read from the
log, because ``Session.append`` stores an event before its listeners can throw.

Cancellation: the step's :class:`AbortController` is the source of truth for why
work stopped. Its abort also interrupts a blocked model stream or tool at once
(the awaited work is cancelled), so a stalled provider cannot hold a turn open.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Coroutine
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from dsh.core.agent import (
    AGENT_REQUEST,
    AGENT_STEERING,
    AGENT_STEP_END,
    AGENT_STEP_RESULT,
    AGENT_STEP_START,
    AGENT_STREAM_CHUNK,
    AGENT_TURN_CONTINUATION,
    AGENT_TURN_END,
    AGENT_TURN_START,
)
from dsh.core.errors import HarnessError, error_code, error_message, to_error
from dsh.core.llm import LLM, BlockAssembler, FinishReason, GenerateOptions, Message
from dsh.core.redact import redact_secrets
from dsh.core.session import SESSION_CHECKPOINT, SESSION_FLUSH, ErrorReason, Session, TurnEndReason, last_turn_number
from dsh.core.system_prompt import SYSTEM_PROMPT, render_prompt
from dsh.core.tools import TOOLS, ToolExecution, ToolExecutionResult, ToolRegistry
from dsh.kernel import AbortController, AbortSignal, ServiceKey

if TYPE_CHECKING:
    from dsh.agent_loop.agent import ReactLoopAgent

T = TypeVar("T")


class StepAbortedError(Exception):
    """The step's signal fired; the message is the abort reason."""


@dataclass(slots=True)
class StepOutcome:
    had_tool_calls: bool
    finish: FinishReason


def abort_reason(signal: AbortSignal) -> str:
    reason = signal.reason
    return str(reason if reason is not None else "aborted")


def error_reason(error: BaseException) -> ErrorReason:
    """The turn-end reason for ``error``: ``{kind, message}`` plus ``code`` when it has a string one.

    The message is passed through :func:`redact_secrets` first: it is stored in the session log.
    """
    reason: ErrorReason = {"kind": "error", "message": redact_secrets(error_message(error))}
    code = error_code(error)
    if code is not None:
        reason["code"] = code
    return reason


async def _settle(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def _value(value: T) -> T:
    return value


async def _reported(work: Awaitable[T]) -> tuple[bool, Any]:
    """Await ``work`` and report how it ended instead of raising: ``(True, value)`` or ``(False, error)``.

    A task running this finishes normally even when ``work`` fails or is cancelled,
    so whoever awaits the task is resumed with a value, never by a thrown exception.
    """
    try:
        return True, await work
    except (Exception, asyncio.CancelledError) as error:
        return False, error


async def race_abort(work: Coroutine[Any, Any, T], signal: AbortSignal) -> T:
    """Await ``work``; if ``signal`` fires first, cancel it and raise :class:`StepAbortedError`.

    The work runs as its own task (so the abort can interrupt it at once) that
    reports its outcome as a value, and a failure is raised here as an ordinary
    exception rather than thrown into the awaiting coroutine chain (CPython 3.11
    drops trace events for frames resumed by a throw, which would hide these lines
    from coverage). A work task cancelled before it could report (the signal fired
    before it ran, or while it finished without awaiting again) counts as aborted.
    Cancelling the caller cancels the work and waits for it; the caller's
    cancellation is re-raised even if the work swallowed it. ``work`` is closed
    unstarted when the signal has already fired.
    """
    if signal.aborted:
        work.close()
        raise StepAbortedError(abort_reason(signal))
    caller = asyncio.current_task()
    assert caller is not None, "race_abort runs inside a task"
    cancels = caller.cancelling()
    task = caller.get_loop().create_task(_reported(work))
    remove = signal.add_callback(task.cancel)
    try:
        finished, value = await task
    except asyncio.CancelledError as cancelled:
        work.close()  # never started if the task was cancelled before its first step
        finished, value = False, cancelled
    finally:
        remove()
    if caller.cancelling() > cancels:  # the caller itself is being cancelled
        raise value if isinstance(value, asyncio.CancelledError) else asyncio.CancelledError()
    if finished:
        return value  # type: ignore[no-any-return]
    if isinstance(value, Exception):
        raise value
    raise StepAbortedError(abort_reason(signal))


def _without_tool_calls(message: Message) -> Message:
    return {
        "role": message["role"],
        "content": [b for b in message["content"] if b.get("type") != "tool-call"],
    }


def _parse_arguments(raw: str) -> Any:
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return raw


class FinishError(Exception):
    """A model stream that ended with ``finish {kind: error|aborted}``; ``code`` may be None."""

    def __init__(self, message: str, code: str | None) -> None:
        super().__init__(message)
        self.code = code


def _finish_error(finish: FinishReason) -> FinishError | None:
    kind = finish.get("kind")
    if kind == "error":
        code = finish.get("code")
        return FinishError(str(finish.get("message", "")), code if isinstance(code, str) else None)
    if kind == "aborted":
        return FinishError("model stream aborted", "ABORTED")
    return None


class TurnRun:
    """One turn: its state and the idempotent finalizers."""

    def __init__(self, agent: ReactLoopAgent, turn: int) -> None:
        self.agent = agent
        self.turn = turn
        self.reason: TurnEndReason = {"kind": "completed"}
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
        agent = self.agent
        failure: BaseException | None = None
        try:
            agent.session.append("step/end", {"turn": self.turn, "step": self.step})
        except Exception as error:
            failure = error
        try:
            agent.ctx.emit(AGENT_STEP_END, agent, self.turn, self.step)
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
        agent = self.agent
        if not self.turn_ended:
            reason = error_reason(error)
            self.reason = reason
            data: dict[str, Any] = {"turn": self.turn, "step": self.step, "message": reason["message"]}
            if "code" in reason:
                data["code"] = reason["code"]
            try:
                agent.session.append("error", data)
            except Exception as listener_error:
                agent.ctx.logger.warn(
                    'agent "%s": session/event listener threw on the error event at turn %s: %s',
                    agent.id,
                    self.turn,
                    listener_error,
                )
        else:
            agent.ctx.logger.warn(
                'agent "%s": agent/turn-end listener threw after turn %s closed: %s',
                agent.id,
                self.turn,
                error_message(error),
            )
        agent.report_error(self.turn, self.step, error)

    def close_turn(self, emit: bool) -> None:
        """Append ``turn/end`` once; with ``emit``, fire ``agent/turn-end`` (uncaught)."""
        if self.turn_ended:
            return
        self.turn_ended = True
        agent = self.agent
        try:
            agent.session.append("turn/end", {"turn": self.turn, "reason": self.reason})
        except Exception as error:
            agent.ctx.logger.warn(
                'agent "%s": session/event listener threw on turn/end at turn %s: %s',
                agent.id,
                self.turn,
                error,
            )
        if emit:
            agent.ctx.emit(AGENT_TURN_END, agent, self.turn, self.reason)

    # -------------------------------------------------------------------- turn
    def _turn_logged(self) -> bool:
        for event in reversed(self.agent.session.events):
            if event["type"] == "turn/start" and event["data"].get("turn") == self.turn:
                return True
        return False

    def drain_steering(self) -> bool:
        agent = self.agent
        steered = agent.inbox.drain_steering()
        for message in steered:
            agent.session.append(
                "steering/message", {"turn": self.turn, "content": message.content, "source": message.source}
            )
            agent.ctx.emit(AGENT_STEERING, agent, self.turn, message.content, message.source)
        return bool(steered)

    async def run(self) -> None:
        agent = self.agent
        queued = agent.inbox.drain_queued()
        if not queued:
            raise HarnessError("runTurn invariant violated: no queued message at turn start", "INVARIANT")
        turn = self.turn
        try:
            agent.session.append(
                "turn/start", {"turn": turn, "trigger": {"kind": "message", "source": queued[0].source}}
            )
            for message in queued:
                agent.session.append("user/message", {"content": message.content, "source": message.source})
            agent.ctx.emit(AGENT_TURN_START, agent, turn)
            await self._steps()
            self.close_turn(emit=True)
        except Exception as caught:
            if not self._turn_logged():
                raise
            self.close_step()
            if agent.is_disposed() and not self.error_reported:
                self.reason = {"kind": "disposed"}
            else:
                self.fail_turn(to_error(caught))
            self.close_turn(emit=False)
        try:
            await agent.ctx.parallel(SESSION_FLUSH, agent.session)
        except Exception as caught:
            error = to_error(caught)
            agent.ctx.logger.warn(
                'agent "%s": session/flush failed at turn %s: %s', agent.id, turn, error_message(error)
            )
            agent.report_error(turn, self.step, error)

    async def _steps(self) -> None:
        agent = self.agent
        turn = self.turn
        while True:
            self.step += 1
            step = self.step
            self.drain_steering()
            agent.session.append("step/start", {"turn": turn, "step": step})
            self.step_open = True
            agent.ctx.emit(AGENT_STEP_START, agent, turn, step)
            controller = AbortController()
            agent.current_abort = controller
            if agent.is_cancel_requested():
                agent.current_abort = None
                self.reason = {"kind": "aborted", "reason": "cancelled"}
                self.close_step()
                return
            outcome: StepOutcome | BaseException
            try:
                await agent.ctx.parallel(SESSION_CHECKPOINT, agent.session)  # the user's words and earlier steps
                outcome = await run_step(agent, turn, step, controller.signal)
            except Exception as error:
                outcome = to_error(error)
            finally:
                agent.current_abort = None
            if isinstance(outcome, BaseException):
                self.close_step()
                if agent.is_disposed():
                    self.reason = {"kind": "disposed"}
                elif controller.signal.aborted:
                    self.reason = {"kind": "aborted", "reason": abort_reason(controller.signal)}
                else:
                    self.fail_turn(outcome)
                return
            if outcome.finish.get("kind") == "max-tokens":
                self.reason = {"kind": "max-tokens"}
            steered = self.drain_steering()
            if self.close_step():
                return
            default = outcome.had_tool_calls or steered
            cont = default
            if agent.ctx.listener_count(AGENT_TURN_CONTINUATION):
                try:
                    decision = await _settle(
                        agent.ctx.waterfall(
                            AGENT_TURN_CONTINUATION, agent, turn, default, inner=partial(_value, default)
                        )
                    )
                except Exception as error:
                    self.fail_turn(to_error(error))
                    return
                cont = bool(decision)
            if not cont and agent.inbox.has_steering():
                cont = True
            if agent.is_cancel_requested():
                self.reason = {"kind": "aborted", "reason": "cancelled"}
                return
            if not cont or agent.is_disposed():
                if agent.is_disposed():
                    self.reason = {"kind": "disposed"}
                return


def _require(agent: ReactLoopAgent, key: ServiceKey[T]) -> T:
    service = agent.ctx.get(key)
    if service is None:
        raise HarnessError(
            f'agent "{agent.id}" cannot run a step: the "{key.name}" service is not loaded', "NO_SERVICE"
        )
    return service


async def run_step(agent: ReactLoopAgent, turn: int, step: int, signal: AbortSignal) -> StepOutcome:
    """One model call and its tool calls (SPEC §8.5 ``runStep``).

    When the step is aborted while the model streams, the text it streamed so far
    (what the user saw) is logged as the step's ``assistant/message`` first.
    """
    assembler = BlockAssembler()
    try:
        message, finish, usage = await race_abort(_model_phase(agent, turn, step, signal, assembler), signal)
    except Exception:
        if signal.aborted:
            _log_partial(agent.session, turn, step, assembler)
        raise
    session = agent.session
    ctx = agent.ctx
    rewrite = ctx.listener_count(AGENT_STEP_RESULT) > 0
    if finish.get("kind") == "max-tokens":
        trimmed = _without_tool_calls(message)
        produced: Message = trimmed
        if rewrite:
            produced = _without_tool_calls(
                await _settle(
                    ctx.waterfall(AGENT_STEP_RESULT, agent, turn, step, trimmed, inner=lambda: _value(trimmed))
                )
            )
        if produced["content"]:
            session.append("assistant/message", {"turn": turn, "step": step, "content": produced["content"]})
        if usage is not None:
            session.append("usage", {"turn": turn, "step": step, "usage": usage})
        return StepOutcome(False, finish)
    produced = message
    if rewrite:
        produced = await _settle(
            ctx.waterfall(AGENT_STEP_RESULT, agent, turn, step, message, inner=lambda: _value(message))
        )
    session.append("assistant/message", {"turn": turn, "step": step, "content": produced["content"]})
    if usage is not None:
        session.append("usage", {"turn": turn, "step": step, "usage": usage})
    calls = [block for block in produced["content"] if block.get("type") == "tool-call"]
    if calls:
        tools = _require(agent, TOOLS)
        for call in calls:
            if signal.aborted:
                raise StepAbortedError(abort_reason(signal))
            call_id: str = call["id"]  # type: ignore[typeddict-item]
            name: str = call["name"]  # type: ignore[typeddict-item]
            raw: str = call["arguments"]  # type: ignore[typeddict-item]
            session.append("tool/call", {"turn": turn, "step": step, "callId": call_id, "name": name, "arguments": raw})
            execution = ToolExecution(
                call_id=call_id, name=name, arguments=_parse_arguments(raw), agent=agent, signal=signal
            )
            result = await _execute(tools, execution, signal)
            data: dict[str, Any] = {
                "turn": turn,
                "step": step,
                "callId": call_id,
                "content": result.content,
                "isError": result.is_error,
            }
            if result.error is not None:
                data["error"] = {"name": result.error["name"], "code": result.error["code"]}
            session.append("tool/result", data)
            if signal.aborted:
                raise StepAbortedError(abort_reason(signal))
    return StepOutcome(bool(calls), finish)


async def _execute(tools: ToolRegistry, execution: ToolExecution, signal: AbortSignal) -> ToolExecutionResult:
    """Run one tool; an abort cancels it and yields an error result (the call still gets its result)."""
    try:
        return await race_abort(tools.execute(execution), signal)
    except StepAbortedError as aborted:
        return ToolExecutionResult(
            call_id=execution.call_id,
            content=[{"type": "text", "text": f"Error: aborted: {aborted}"}],
            is_error=True,
            error={"name": "AbortError", "code": "ABORTED"},
        )


def _log_partial(session: Session, turn: int, step: int, assembler: BlockAssembler) -> None:
    """Log the text blocks ``assembler`` holds (the partial answer of an aborted step), if any."""
    partial = [block for block in assembler.blocks() if block["type"] == "text" and block["text"]]
    if partial:
        session.append("assistant/message", {"turn": turn, "step": step, "content": partial})


async def _model_phase(
    agent: ReactLoopAgent, turn: int, step: int, signal: AbortSignal, assembler: BlockAssembler
) -> tuple[Message, FinishReason, Any]:
    ctx = agent.ctx
    session = agent.session
    assembly = await _require(agent, SYSTEM_PROMPT).assemble()
    parts = [render_prompt(assembly), agent.options.system_prompt or ""]
    system = "\n\n".join(part for part in parts if part)
    request = GenerateOptions(
        model=agent.options.model or "",
        messages=session.derive_messages(),
        system=system or None,
        tools=list(assembly.tools) or None,
        signal=signal,
    )
    if ctx.listener_count(AGENT_REQUEST):
        request = await _settle(ctx.waterfall(AGENT_REQUEST, agent, turn, step, request, inner=lambda: _value(request)))
    if not request.model:
        raise HarnessError(
            f'agent "{agent.id}" has no model: set AgentOptions.model or supply one via the agent/request waterfall',
            "NO_MODEL",
        )
    llm = _require(agent, LLM)
    stream = llm.stream(request)
    append = session.append
    emit = ctx.emit
    push = assembler.push
    try:
        async for chunk in stream:
            if signal.aborted:
                raise StepAbortedError(abort_reason(signal))
            append("assistant/chunk", {"turn": turn, "step": step, "chunk": chunk})
            emit(AGENT_STREAM_CHUNK, agent, turn, step, chunk)
            push(chunk)
    finally:
        close = getattr(stream, "aclose", None)
        if close is not None:
            await close()
    finish = assembler.finish
    failure = _finish_error(finish)
    if failure is not None:
        raise failure
    return assembler.message(), finish, assembler.usage


async def run_loop(agent: ReactLoopAgent) -> None:
    """The agent's driver task: wait for work, run turns, until the agent is disposed."""
    inbox = agent.inbox
    disposed = agent.disposed_future
    while not agent.is_disposed():
        await inbox.wait_for_queued(disposed)
        if agent.is_disposed():
            break
        if agent.is_cancel_requested():
            agent.cancel_requested = False
            agent.settle_idle()
            continue
        if not inbox.has_queued():  # a kept wake-up whose messages were already taken
            continue
        agent.set_status("running")
        if agent.is_cancel_requested():
            agent.cancel_requested = False
            agent.set_status("idle")
            continue
        turn = last_turn_number(agent.session) + 1
        try:
            await TurnRun(agent, turn).run()
        except Exception as caught:
            error = to_error(caught)
            agent.ctx.logger.warn(
                'agent "%s": turn %s failed before it started: %s', agent.id, turn, error_message(error)
            )
            agent.report_error(turn, 0, error)
        agent.cancel_requested = False
        for message in inbox.drain_steering():
            inbox.enqueue(message)
        if not inbox.has_queued():
            agent.set_status("idle")
