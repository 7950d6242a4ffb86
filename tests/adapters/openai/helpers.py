"""Shared helpers for the llm-openai tests: request options, chunk collection, SDK chunk builders."""

from __future__ import annotations

from collections.abc import AsyncIterable, Iterable
from typing import Any, TypeVar

from openai.types.chat import ChatCompletionChunk

from dsh.core.llm import GenerateOptions, Message, StreamChunk, text, to_json

T = TypeVar("T")

KEY = "sk-test"


async def collect(stream: AsyncIterable[T]) -> list[T]:
    return [item async for item in stream]


def user(content: str) -> Message:
    return Message("user", (text(content),))


def options(model: str = "deepseek-v4-flash", prompt: str = "hi", **fields: Any) -> GenerateOptions:
    """Options for one call with a single user message; ``fields`` set the rest."""
    opts = GenerateOptions(model=model, messages=[user(prompt)])
    for key, value in fields.items():
        setattr(opts, key, value)
    return opts


def kinds(chunks: Iterable[StreamChunk | dict[str, Any]]) -> list[str]:
    """The ``type`` of each chunk (typed, or in its JSON form)."""
    return [to_json(chunk)["type"] for chunk in chunks]


def sdk_chunk(*choices: dict[str, Any], usage: dict[str, Any] | None = None) -> ChatCompletionChunk:
    """A well-formed chunk as the SDK models it (provider extras kept in ``model_extra``)."""
    payload: dict[str, Any] = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "m",
        "choices": list(choices),
    }
    if usage is not None:
        payload["usage"] = usage
    return ChatCompletionChunk.model_validate(payload)


def delta(finish_reason: str | None = None, **fields: Any) -> dict[str, Any]:
    """One choice whose delta has ``fields`` (``reasoning_content`` included as an extra)."""
    return {"index": 0, "delta": fields, "finish_reason": finish_reason}
