"""Builders for recorded session logs and chunk scripts (the only fake here: the model)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path
from typing import Any

from dsh.core.llm import (
    BlockEndChunk,
    BlockStartChunk,
    FinishChunk,
    FinishReason,
    GenerateOptions,
    LlmAdapter,
    LlmService,
    Message,
    StopFinish,
    StreamChunk,
    TextBlock,
    TextDeltaChunk,
    TokenUsage,
    UsageChunk,
    text,
    to_json,
)
from dsh.core.session import SessionEvent, parse_session_event
from dsh.kernel import AbortSignal
from dsh.plugins.llm_replay import ChunksEntry

HEADER: dict[str, Any] = {"type": "session", "version": 1, "id": "s-1", "createdAt": 1}
PROJECT_ROOT = Path(__file__).resolve().parents[3]
CONFORMANCE = PROJECT_ROOT / "tests" / "examples" / "acp" / "reference"


def dumps(value: object) -> str:
    """Compact JSON of ``value`` (typed values as their wire JSON)."""
    return json.dumps(to_json(value), ensure_ascii=False, separators=(",", ":"))


def start(index: int = 0, block_type: str = "text") -> BlockStartChunk:
    return BlockStartChunk(index=index, block_type=block_type)


def delta(value: str, index: int = 0) -> TextDeltaChunk:
    return TextDeltaChunk(index=index, text=value)


def finish(reason: FinishReason | None = None) -> FinishChunk:
    return FinishChunk(reason=reason if reason is not None else StopFinish())


def answer(value: str) -> list[StreamChunk]:
    """A complete recorded model call answering ``value``."""
    return [
        start(),
        delta(value),
        BlockEndChunk(index=0, block=TextBlock(text=value)),
        UsageChunk(usage=TokenUsage(input_tokens=3, output_tokens=1)),
        finish(),
    ]


def entry(chunks: Iterable[StreamChunk]) -> ChunksEntry:
    """The ``chunks`` entry of one model call."""
    return ChunksEntry(chunks=tuple(chunks))


def event(kind: str, data: object, seq: int = 0) -> dict[str, Any]:
    """One logged event as JSON (typed values in ``data`` become their wire JSON)."""
    return {"type": kind, "seq": seq, "time": 1000 + seq, "data": to_json(data)}


def turn_start(turn: int) -> dict[str, Any]:
    return event("turn/start", {"turn": turn, "trigger": {"kind": "continuation"}})


def turn_end(turn: int) -> dict[str, Any]:
    return event("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


def typed(events: Iterable[dict[str, Any]]) -> list[SessionEvent]:
    """``events`` (JSON) as the typed events a session log decodes to."""
    return [parse_session_event(item) for item in events]


def chunk_event(turn: int, step: int, chunk: StreamChunk, seq: int = 0) -> dict[str, Any]:
    return event("assistant/chunk", {"turn": turn, "step": step, "chunk": chunk}, seq)


def recorded_call(turn: int, step: int, chunks: Iterable[StreamChunk]) -> list[dict[str, Any]]:
    """The ``step/start``, ``assistant/chunk``... and ``step/end`` events of one model call."""
    events = [event("step/start", {"turn": turn, "step": step})]
    events.extend(chunk_event(turn, step, chunk) for chunk in chunks)
    events.append(event("step/end", {"turn": turn, "step": step}))
    return events


def log_text(events: Sequence[dict[str, Any]]) -> str:
    """A session JSONL text: the header line, then one line per event (seq renumbered)."""
    lines = [dumps(HEADER)]
    lines.extend(dumps({**item, "seq": seq}) for seq, item in enumerate(events))
    return "\n".join(lines) + "\n"


def write_log(path: Path, events: Sequence[dict[str, Any]]) -> Path:
    path.write_text(log_text(events), encoding="utf-8")
    return path


def write_json(path: Path, value: object) -> Path:
    path.write_text(dumps(value), encoding="utf-8")
    return path


def options(model: str = "any-model", signal: AbortSignal | None = None) -> GenerateOptions:
    return GenerateOptions(model=model, messages=[Message("user", (text("hi"),))], signal=signal)


async def drain(llm: LlmService, opts: GenerateOptions | None = None) -> list[StreamChunk]:
    return [chunk async for chunk in llm.stream(opts if opts is not None else options())]


async def collect(stream: AsyncIterator[StreamChunk]) -> list[StreamChunk]:
    return [chunk async for chunk in stream]


class RealModel(LlmAdapter):
    """A stand-in provider that answers every call with ``chunks`` and counts calls."""

    def __init__(self, chunks: Sequence[StreamChunk]) -> None:
        self.chunks = list(chunks)
        self.calls = 0

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        self.calls += 1
        for chunk in self.chunks:
            yield chunk
