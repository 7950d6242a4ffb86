"""Builders for recorded session logs and chunk scripts (the only fake here: the model)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path
from typing import Any

from dsh.core.llm import (
    BlockStartChunk,
    FinishChunk,
    FinishReason,
    GenerateOptions,
    LlmAdapter,
    LlmService,
    StreamChunk,
    TextDeltaChunk,
)
from dsh.kernel import AbortSignal

HEADER: dict[str, Any] = {"type": "session", "version": 1, "id": "s-1", "createdAt": 1}
PROJECT_ROOT = Path(__file__).resolve().parents[3]
CONFORMANCE = PROJECT_ROOT / "tests" / "examples" / "acp" / "reference"


def dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def start(index: int = 0, block_type: str = "text") -> BlockStartChunk:
    return {"type": "block-start", "index": index, "blockType": block_type}


def delta(text: str, index: int = 0) -> TextDeltaChunk:
    return {"type": "text-delta", "index": index, "text": text}


def finish(reason: FinishReason | None = None) -> FinishChunk:
    return {"type": "finish", "reason": reason if reason is not None else {"kind": "stop"}}


def answer(text: str) -> list[StreamChunk]:
    """A complete recorded model call answering ``text``."""
    return [
        start(),
        delta(text),
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}},
        {"type": "usage", "usage": {"inputTokens": 3, "outputTokens": 1}},
        finish(),
    ]


def event(kind: str, data: object, seq: int = 0) -> dict[str, Any]:
    return {"type": kind, "seq": seq, "time": 1000 + seq, "data": data}


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
    return GenerateOptions(
        model=model, messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}], signal=signal
    )


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
