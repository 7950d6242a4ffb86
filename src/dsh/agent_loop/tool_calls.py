"""The tool calls of one step: run in the model's order, consecutive concurrency-safe ones together.

Grouping. The calls are scanned in the model's order. A call whose tool is registered
with ``concurrency_safe`` joins the safe calls right before it: a run of consecutive
safe calls is a *batch*, whose calls run together, at most ``state.max_parallel`` at
once (a rolling pool: when one settles, the next starts). Any other call (an unsafe
tool, an unknown one) is a barrier: it starts once everything before it has settled,
and runs alone. A group is classified when the scan reaches it, after the group
before it has settled, so a tool registered or removed by an earlier call counts as
it is by then. One call alone is run without a pool.

The log. Each call's ``tool/call`` is appended right before that call starts: the
``tool/call`` events of a batch are *not* all logged before the batch starts, only
those of the calls that got a pool slot (a call waiting for a slot is logged when it
gets one). So a ``tool/call`` in the log means the call started, and the calls are
logged in the model's order. Each ``tool/result`` is appended, again in the model's
order, once that call and every earlier call of its batch have settled: a fast
result waits for a slower sibling before it, so the history the model sees next is
the same whatever finished first. The calls logged are written to storage
(``session/checkpoint``, without a sync) before they start, so a process that dies
while a call runs leaves that call in its log: the resume closes it as interrupted
rather than losing it and having the model ask for it again. That checkpoint is cheap
when nothing else of the session is being written: the persistence coordinator then
writes the new events before its listener returns (no task, nothing for the dispatch
to await), with JSONL one unsynced ``write``. Measured on the bench's no-op tool step
(JSONL, callgrind): 2.16 M instructions a step without any checkpoint, 2.26 M with this
one and the step's (+5%, plus the system calls of two appends, about 7 µs each), where
the chained write cost 2.72 M (+26%); see docs/benchmarks.md, session 7.

Abort. Once the step's signal has fired, no further call starts (nor is logged); the
running ones are cancelled and each gets an ``ABORTED`` error result, so every logged
``tool/call`` has exactly one ``tool/result``; then :class:`StepAbortedError` ends
the step.

Failure. A tool call never raises (the registry turns failures into error results).
If an append raises (a session listener), nothing new starts, the calls still running
are cancelled and awaited, and the error propagates to the step, which fails; a call
whose result could not be logged stays unanswered, as in a serial step. Cancelling the
step's task does the same. No call task outlives this module's functions.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from dsh.agent_loop.race import StepAbortedError, abort_reason, race_abort
from dsh.agent_loop.state import LoopState
from dsh.core.llm import TextBlock, ToolCallBlock
from dsh.core.session import (
    SESSION_CHECKPOINT,
    Session,
    ToolCallData,
    ToolCallEvent,
    ToolErrorInfo,
    ToolResultData,
    ToolResultEvent,
)
from dsh.core.tools import ToolExecution, ToolExecutionResult, ToolRegistry, parse_arguments
from dsh.kernel import AbortSignal

_ABORT_ERROR = ToolErrorInfo(name="AbortError", code="ABORTED")


async def run_tool_calls(
    state: LoopState, tools: ToolRegistry, turn: int, step: int, calls: Sequence[ToolCallBlock], signal: AbortSignal
) -> None:
    """Run ``calls`` (see the module docstring); raise :class:`StepAbortedError` once aborted."""
    count = len(calls)
    if count == 1:
        if signal.aborted:
            raise StepAbortedError(abort_reason(signal))
        await _run_one(state, tools, turn, step, calls[0], signal)
    else:
        index = 0
        while index < count:
            if signal.aborted:
                raise StepAbortedError(abort_reason(signal))
            end = index + 1
            if _is_safe(tools, calls[index]):
                while end < count and _is_safe(tools, calls[end]):
                    end += 1
            if end - index == 1:
                await _run_one(state, tools, turn, step, calls[index], signal)
            else:
                await _run_batch(state, tools, turn, step, calls[index:end], signal)
            index = end
    if signal.aborted:
        raise StepAbortedError(abort_reason(signal))


def _is_safe(tools: ToolRegistry, call: ToolCallBlock) -> bool:
    tool = tools.get(call.name)
    return tool is not None and tool.concurrency_safe is True


def _execution(state: LoopState, call: ToolCallBlock, signal: AbortSignal) -> ToolExecution:
    return ToolExecution(
        call_id=call.id, name=call.name, arguments=parse_arguments(call.arguments), agent=state.handle, signal=signal
    )


def _log_call(session: Session, turn: int, step: int, call: ToolCallBlock) -> None:
    session.append(
        ToolCallEvent, ToolCallData(turn=turn, step=step, call_id=call.id, name=call.name, arguments=call.arguments)
    )


async def _write_ahead(state: LoopState) -> None:
    """Write the calls just logged before they run (``session/checkpoint``, no sync).

    A process that dies while a call runs then leaves the call in its log, so the
    resume closes it as interrupted instead of losing it (and asking the model anew).
    """
    await state.ctx.parallel(SESSION_CHECKPOINT, state.session)


def _log_result(session: Session, turn: int, step: int, call: ToolCallBlock, result: ToolExecutionResult) -> None:
    session.append(
        ToolResultEvent,
        ToolResultData(
            turn=turn,
            step=step,
            call_id=call.id,
            content=result.content,
            is_error=result.is_error,
            error=result.error,
        ),
    )


async def _run_one(
    state: LoopState, tools: ToolRegistry, turn: int, step: int, call: ToolCallBlock, signal: AbortSignal
) -> None:
    session = state.session
    _log_call(session, turn, step, call)
    await _write_ahead(state)
    result = await _execute(tools, _execution(state, call, signal), signal)
    _log_result(session, turn, step, call, result)


async def _run_batch(
    state: LoopState,
    tools: ToolRegistry,
    turn: int,
    step: int,
    calls: Sequence[ToolCallBlock],
    signal: AbortSignal,
) -> None:
    """Run the safe ``calls`` together in a rolling pool; results logged in order (module docstring)."""
    session = state.session
    limit = state.max_parallel
    loop = asyncio.get_running_loop()
    started: list[asyncio.Task[ToolExecutionResult]] = []
    running: set[asyncio.Task[ToolExecutionResult]] = set()
    committed = 0
    try:
        while True:
            fresh: list[ToolCallBlock] = []
            while len(started) + len(fresh) < len(calls) and len(running) + len(fresh) < limit and not signal.aborted:
                call = calls[len(started) + len(fresh)]
                _log_call(session, turn, step, call)
                fresh.append(call)
            if fresh:
                await _write_ahead(state)
            for call in fresh:
                task = loop.create_task(_execute(tools, _execution(state, call, signal), signal))
                started.append(task)
                running.add(task)
            if not running:
                return
            _, running = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            while committed < len(started) and started[committed].done():
                _log_result(session, turn, step, calls[committed], started[committed].result())
                committed += 1
    finally:
        if running:
            for task in running:
                task.cancel()
            await asyncio.wait(running)


async def _call(tools: ToolRegistry, execution: ToolExecution) -> ToolExecutionResult:
    return await tools.execute(execution)


async def _execute(tools: ToolRegistry, execution: ToolExecution, signal: AbortSignal) -> ToolExecutionResult:
    """Run one tool; an abort cancels it and yields an error result (the call still gets its result).

    The registry's coroutine is made only once the work starts (in :func:`_call`): an
    abort that lands before then closes the unstarted ``_call``, leaving no coroutine
    that was never awaited.
    """
    try:
        return await race_abort(_call(tools, execution), signal)
    except StepAbortedError as aborted:
        return ToolExecutionResult(
            call_id=execution.call_id,
            content=(TextBlock(text=f"Error: aborted: {aborted}"),),
            is_error=True,
            error=_ABORT_ERROR,
        )
