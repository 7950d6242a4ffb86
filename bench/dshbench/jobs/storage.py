"""Persistence jobs: append throughput with a flush per turn, and load + resume of big logs.

Events go through the live write path (``Session.append`` on a store-created session,
adopted by the backend's coordinator, written on ``session/flush``). Every turn has
the shape the loop writes for a tool call followed by an answer (:data:`EVENTS_PER_TURN`
events), with short realistic payloads.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from dsh.core.agent import AGENTS, AgentOptions, ResumeAgentOptions
from dsh.core.llm import (
    BlockEndChunk,
    BlockStartChunk,
    FinishChunk,
    StopFinish,
    StreamChunk,
    TextDeltaChunk,
    TokenUsage,
    ToolCallBlock,
    ToolCallDeltaChunk,
    ToolCallsFinish,
    UsageChunk,
    UserSource,
    text,
)
from dsh.core.session import (
    SESSION_FLUSH,
    SESSIONS,
    AssistantChunkData,
    AssistantChunkEvent,
    AssistantMessageData,
    AssistantMessageEvent,
    CompletedReason,
    MessageData,
    MessageTrigger,
    Session,
    SessionEventBase,
    StepData,
    StepEndEvent,
    StepStartEvent,
    ToolCallData,
    ToolCallEvent,
    ToolResultData,
    ToolResultEvent,
    TurnEndData,
    TurnEndEvent,
    TurnStartData,
    TurnStartEvent,
    UsageData,
    UsageEvent,
    UserMessageEvent,
)
from dsh.kernel import Context
from dshbench.jobs.checks import BenchRunError
from dshbench.probe import Probe, peak_rss_kb
from dshbench.stack import MODEL, UNUSED_URL, Persistence, StackOptions, boot

ANSWER = "The build passes now: the failing import came from a stale module path, which I fixed in setup.cfg."
COMMAND = '{"command":"pytest -q tests/test_config.py","description":"run the config tests"}'
OUTPUT = "....................                                    [100%]\n20 passed in 0.41s\n"


def _chunk(turn: int, step: int, chunk: StreamChunk) -> tuple[type[SessionEventBase], object]:
    return (AssistantChunkEvent, AssistantChunkData(turn=turn, step=step, chunk=chunk))


def turn_events(turn: int) -> list[tuple[type[SessionEventBase], object]]:
    """The ``(event class, data)`` of one turn: a bash call, its result, then a streamed answer."""
    call_id = f"call-{turn}"
    tool_block = ToolCallBlock(id=call_id, name="bash", arguments=COMMAND)
    delta = ToolCallDeltaChunk(index=0, id=call_id, name="bash", arguments_delta=COMMAND)
    usage = TokenUsage(input_tokens=1200 + turn, output_tokens=40, cache_read_tokens=1024)
    user = UserSource()
    words = ANSWER.split(" ")
    third = len(words) // 3
    pieces = [" ".join(words[:third]) + " ", " ".join(words[third : 2 * third]) + " ", " ".join(words[2 * third :])]
    return [
        (TurnStartEvent, TurnStartData(turn=turn, trigger=MessageTrigger(source=user))),
        (UserMessageEvent, MessageData(content=(text(f"Fix the failing test, take {turn}."),), source=user)),
        (StepStartEvent, StepData(turn=turn, step=1)),
        _chunk(turn, 1, BlockStartChunk(index=0, block_type="tool-call")),
        _chunk(turn, 1, delta),
        _chunk(turn, 1, BlockEndChunk(index=0, block=tool_block)),
        _chunk(turn, 1, UsageChunk(usage=usage)),
        _chunk(turn, 1, FinishChunk(reason=ToolCallsFinish())),
        (AssistantMessageEvent, AssistantMessageData(turn=turn, step=1, content=(tool_block,))),
        (UsageEvent, UsageData(turn=turn, step=1, usage=usage)),
        (ToolCallEvent, ToolCallData(turn=turn, step=1, call_id=call_id, name="bash", arguments=COMMAND)),
        (
            ToolResultEvent,
            ToolResultData(turn=turn, step=1, call_id=call_id, content=(text(OUTPUT),), is_error=False),
        ),
        (StepEndEvent, StepData(turn=turn, step=1)),
        (StepStartEvent, StepData(turn=turn, step=2)),
        _chunk(turn, 2, BlockStartChunk(index=0, block_type="text")),
        *(_chunk(turn, 2, TextDeltaChunk(index=0, text=piece)) for piece in pieces),
        _chunk(turn, 2, BlockEndChunk(index=0, block=text(ANSWER))),
        _chunk(turn, 2, UsageChunk(usage=usage)),
        _chunk(turn, 2, FinishChunk(reason=StopFinish())),
        (AssistantMessageEvent, AssistantMessageData(turn=turn, step=2, content=(text(ANSWER),))),
        (UsageEvent, UsageData(turn=turn, step=2, usage=usage)),
        (StepEndEvent, StepData(turn=turn, step=2)),
        (TurnEndEvent, TurnEndData(turn=turn, reason=CompletedReason())),
    ]


EVENTS_PER_TURN = len(turn_events(1))


def append_turn(session: Session, turn: int) -> None:
    for kind, data in turn_events(turn):
        session.append(kind, data)


_PG: dict[str, str] = {}
"""``url``: the PostgreSQL server of a ``postgres`` job (its ``pgUrl`` parameter), set when the job starts."""


def _store(backend: Persistence, scratch: str) -> dict[str, Any]:
    """Where ``backend`` stores sessions for a job working in ``scratch`` (PostgreSQL: a schema of its own)."""
    if backend == "postgres":
        return {"store": _PG["url"], "pg_schema": "bench_" + os.path.basename(scratch).replace("-", "_").lower()}
    return {"store": scratch if backend == "jsonl" else os.path.join(scratch, "sessions.db")}


def _storage_only(backend: Persistence, scratch: str) -> StackOptions:
    return StackOptions(persistence=backend, **_store(backend, scratch), invariants=False, bash=False, loop=False)


async def _flush(ctx: Context, session: Session) -> None:
    await ctx.parallel(SESSION_FLUSH, session)


async def append_rate_job(params: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """``turns`` turns appended to one session, each followed by a flush."""
    backend: Persistence = params["backend"]
    _PG["url"] = params.get("pgUrl", "")
    with tempfile.TemporaryDirectory(prefix="dsh-bench-") as scratch:
        ctx = await boot(_storage_only(backend, scratch))
        try:
            session = ctx[SESSIONS].create("bench-append")
            with probe.region() as span:
                for turn in range(1, params["turns"] + 1):
                    append_turn(session, turn)
                    await _flush(ctx, session)
            events = len(session.events)
        finally:
            await ctx.dispose()
    return {"cpu": span.cpu, "wall": span.wall, "events": events}


async def _build_log(backend: Persistence, scratch: str, session_id: str, events: int) -> int:
    ctx = await boot(_storage_only(backend, scratch))
    try:
        session = ctx[SESSIONS].create(session_id)
        turn = 0
        while len(session.events) < events:
            turn += 1
            append_turn(session, turn)
            if turn % 40 == 0:
                await _flush(ctx, session)
        await _flush(ctx, session)
        return len(session.events)
    finally:
        await ctx.dispose()


async def _resume_once(backend: Persistence, scratch: str, session_id: str, probe: Probe) -> tuple[float, float, int]:
    options = StackOptions(persistence=backend, **_store(backend, scratch), base_url=UNUSED_URL)
    ctx = await boot(options)
    try:
        with probe.region() as span:
            agent = await ctx[AGENTS].resume(ResumeAgentOptions("main", session_id, AgentOptions(model=MODEL)))
        loaded = len(agent.session.events)
    finally:
        await ctx.dispose()
    return span.cpu, span.wall, loaded


async def resume_job(params: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """Build one log per size once, then time ``agents.resume`` (load + resume) ``repeats`` times each."""
    backend: Persistence = params["backend"]
    _PG["url"] = params.get("pgUrl", "")
    sizes: list[int] = params["sizes"]
    results: dict[str, dict[str, list[float]]] = {str(size): {"cpu": [], "wall": []} for size in sizes}
    with tempfile.TemporaryDirectory(prefix="dsh-bench-") as scratch:
        built = {size: await _build_log(backend, scratch, f"bench-{size}", size) for size in sizes}
        for _ in range(params["repeats"]):
            for size in sizes:
                cpu, wall, loaded = await _resume_once(backend, scratch, f"bench-{size}", probe)
                if loaded != built[size]:
                    raise BenchRunError(f"resumed {loaded} events of bench-{size}, expected {built[size]}")
                results[str(size)]["cpu"].append(cpu)
                results[str(size)]["wall"].append(wall)
    return {"sizes": results, "events": {str(size): count for size, count in built.items()}, "peakRssKB": peak_rss_kb()}
