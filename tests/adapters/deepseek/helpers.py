"""Shared helpers for the DeepSeek adapter tests: byte/payload sources and request options."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import TypeVar

from dsh.core.llm import GenerateOptions, Message, StreamChunk, text

T = TypeVar("T")


async def source(items: Iterable[T]) -> AsyncIterator[T]:
    """An async iterator over ``items`` (a byte stream or a payload stream)."""
    for item in items:
        yield item


async def collect(stream: AsyncIterable[T]) -> list[T]:
    return [item async for item in stream]


def user(content: str) -> Message:
    return {"role": "user", "content": [text(content)]}


def options(model: str = "deepseek-v4-flash", prompt: str = "hi", **fields: object) -> GenerateOptions:
    """Options for one call with a single user message; ``fields`` set the rest."""
    opts = GenerateOptions(model=model, messages=[user(prompt)])
    for key, value in fields.items():
        setattr(opts, key, value)
    return opts


def kinds(chunks: Iterable[StreamChunk]) -> list[str]:
    return [chunk["type"] for chunk in chunks]
