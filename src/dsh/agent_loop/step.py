"""One step of a turn: a model call, then the tool calls it asked for (SPEC §8.5 ``runStep``).

Everything the step logs goes to the agent's session as typed events; a failure is
raised to the turn (:mod:`dsh.agent_loop.loop`), which closes the step and the turn.
The tool calls are run by :mod:`dsh.agent_loop.tool_calls` (in the model's order,
consecutive concurrency-safe ones together).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from dsh.agent_loop.race import StepAbortedError, abort_reason, race_abort
from dsh.agent_loop.state import LoopState
from dsh.agent_loop.tool_calls import run_tool_calls
from dsh.core.agent import (
    AGENT_REQUEST,
    AGENT_REQUEST_ERROR,
    AGENT_STEP_RESULT,
    AGENT_STREAM_CHUNK,
    RequestFailure,
)
from dsh.core.errors import HarnessError, LlmError
from dsh.core.llm import (
    LLM,
    AbortedFinish,
    BlockAssembler,
    ErrorFinish,
    FinishReason,
    GenerateOptions,
    LlmService,
    MaxTokensFinish,
    Message,
    TextBlock,
    TokenUsage,
    ToolCallBlock,
)
from dsh.core.session import (
    AssistantChunkData,
    AssistantChunkEvent,
    AssistantMessageData,
    AssistantMessageEvent,
    Session,
    UsageData,
    UsageEvent,
)
from dsh.core.system_prompt import SYSTEM_PROMPT, render_prompt
from dsh.core.tools import TOOLS
from dsh.kernel import AbortSignal, ServiceKey

T = TypeVar("T")


@dataclass(slots=True)
class StepOutcome:
    had_tool_calls: bool
    finish: FinishReason


class FinishError(Exception):
    """A model stream that ended with ``finish {kind: error|aborted}``; ``code`` may be None.

    ``status`` and ``retry_after`` are the error finish's, when it carried them.
    """

    def __init__(
        self, message: str, code: str | None, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.status = status
        self.retry_after = retry_after


async def settle(value: Any) -> Any:
    """``value``, awaited first when it is awaitable (a waterfall's result)."""
    return await value if inspect.isawaitable(value) else value


def constant(value: T) -> Callable[[], Awaitable[T]]:
    """A waterfall's ``inner``: a coroutine function answering ``value``."""

    async def inner() -> T:
        return value

    return inner


def _without_tool_calls(message: Message) -> Message:
    return Message(role=message.role, content=tuple([b for b in message.content if type(b) is not ToolCallBlock]))


def _finish_error(finish: FinishReason) -> FinishError | None:
    if isinstance(finish, ErrorFinish):
        code, status, retry_after = finish.code, finish.status, finish.retry_after
        return FinishError(
            finish.message,
            code if isinstance(code, str) else None,
            status if isinstance(status, int) else None,
            retry_after if isinstance(retry_after, float | int) else None,
        )
    if isinstance(finish, AbortedFinish):
        return FinishError("model stream aborted", "ABORTED")
    return None


def require(state: LoopState, key: ServiceKey[T]) -> T:
    """The service under ``key``, or raise NO_SERVICE naming the agent."""
    service = state.ctx.get(key)
    if service is None:
        raise HarnessError(
            f'agent "{state.id}" cannot run a step: the "{key.name}" service is not loaded', "NO_SERVICE"
        )
    return service


async def run_step(state: LoopState, turn: int, step: int, signal: AbortSignal) -> StepOutcome:
    """One model call and its tool calls (SPEC §8.5 ``runStep``).

    When the step is aborted while the model streams, the text it streamed so far
    (what the user saw) is logged as the step's ``assistant/message`` first. A failed
    model request is offered to ``agent/request-error``, which may have it sent again.
    """
    assemblers = [BlockAssembler()]
    try:
        message, finish, usage = await race_abort(_model_phase(state, turn, step, signal, assemblers), signal)
    except Exception:
        if signal.aborted:
            _log_partial(state.session, turn, step, assemblers[-1])
        raise
    session = state.session
    ctx = state.ctx
    agent = state.handle
    rewrite = ctx.listener_count(AGENT_STEP_RESULT) > 0
    if type(finish) is MaxTokensFinish:
        produced = _without_tool_calls(message)
        if rewrite:
            produced = _without_tool_calls(
                await settle(ctx.waterfall(AGENT_STEP_RESULT, agent, turn, step, produced, inner=constant(produced)))
            )
        if produced.content:
            session.append(AssistantMessageEvent, AssistantMessageData(turn=turn, step=step, content=produced.content))
        _log_usage(session, turn, step, usage)
        return StepOutcome(False, finish)
    produced = message
    if rewrite:
        produced = await settle(ctx.waterfall(AGENT_STEP_RESULT, agent, turn, step, message, inner=constant(message)))
    session.append(AssistantMessageEvent, AssistantMessageData(turn=turn, step=step, content=produced.content))
    _log_usage(session, turn, step, usage)
    calls = [block for block in produced.content if type(block) is ToolCallBlock]
    if calls:
        await run_tool_calls(state, require(state, TOOLS), turn, step, calls, signal)
    return StepOutcome(bool(calls), finish)


def _log_usage(session: Session, turn: int, step: int, usage: TokenUsage | None) -> None:
    if usage is not None:
        session.append(UsageEvent, UsageData(turn=turn, step=step, usage=usage))


def _log_partial(session: Session, turn: int, step: int, assembler: BlockAssembler) -> None:
    """Log the text blocks ``assembler`` holds (the partial answer of an aborted step), if any."""
    partial = tuple([block for block in assembler.blocks() if type(block) is TextBlock and block.text])
    if partial:
        session.append(AssistantMessageEvent, AssistantMessageData(turn=turn, step=step, content=partial))


async def _model_phase(
    state: LoopState, turn: int, step: int, signal: AbortSignal, assemblers: list[BlockAssembler]
) -> tuple[Message, FinishReason, TokenUsage | None]:
    """Build the request, then stream it; a failed request may be sent again (``agent/request-error``).

    Each attempt folds into a fresh assembler, the last of ``assemblers`` (so an abort
    logs the partial answer of the current attempt only, none while a retry waits).
    """
    ctx = state.ctx
    session = state.session
    agent = state.handle
    assembly = await require(state, SYSTEM_PROMPT).assemble()
    parts = [render_prompt(assembly), state.options.system_prompt or ""]
    system = "\n\n".join(part for part in parts if part)
    request = GenerateOptions(
        model=state.options.model or "",
        messages=session.derive_messages(),
        system=system or None,
        tools=list(assembly.tools) or None,
        signal=signal,
    )
    if ctx.listener_count(AGENT_REQUEST):
        request = await settle(ctx.waterfall(AGENT_REQUEST, agent, turn, step, request, inner=constant(request)))
    if not request.model:
        raise HarnessError(
            f'agent "{state.id}" has no model: set AgentOptions.model or supply one via the agent/request waterfall',
            "NO_MODEL",
        )
    llm = require(state, LLM)
    attempt = 1
    while True:
        try:
            return await _request(state, turn, step, signal, assemblers[-1], llm, request)
        except (LlmError, FinishError) as error:
            if signal.aborted or not ctx.listener_count(AGENT_REQUEST_ERROR):
                raise
            assemblers.append(BlockAssembler())
            failure = RequestFailure(request=request, attempt=attempt, error=_llm_error(error))
            retry = await settle(ctx.waterfall(AGENT_REQUEST_ERROR, agent, turn, step, failure, inner=constant(False)))
            if not retry:
                raise
            attempt += 1


def _llm_error(error: LlmError | FinishError) -> LlmError:
    if isinstance(error, LlmError):
        return error
    return LlmError(str(error), error.code or "UNKNOWN", error.status, cause=error, retry_after=error.retry_after)


async def _request(
    state: LoopState,
    turn: int,
    step: int,
    signal: AbortSignal,
    assembler: BlockAssembler,
    llm: LlmService,
    request: GenerateOptions,
) -> tuple[Message, FinishReason, TokenUsage | None]:
    """One model request: log and emit each chunk, fold it; raise on a failed finish."""
    session = state.session
    agent = state.handle
    stream = llm.stream(request)
    append = session.append
    emit = state.ctx.emit
    push = assembler.push
    try:
        async for chunk in stream:
            if signal.aborted:
                raise StepAbortedError(abort_reason(signal))
            append(AssistantChunkEvent, AssistantChunkData(turn=turn, step=step, chunk=chunk))
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
