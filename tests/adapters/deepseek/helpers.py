"""Shared helpers for the DeepSeek adapter tests: byte/payload sources and request options."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable
from typing import TypeVar, cast

import aiohttp

from dsh.core.llm import GenerateOptions, Message, StreamChunk, text, to_json

T = TypeVar("T")

WIRE_KEY_ORDER = [
    "model",
    "messages",
    "stream",
    "stream_options",
    "thinking",
    "reasoning_effort",
    "tools",
    "temperature",
    "max_tokens",
    "stop",
]
"""The request body's keys, in wire order, when every option is set."""


async def source(items: Iterable[T]) -> AsyncIterator[T]:
    """An async iterator over ``items`` (a byte stream or a payload stream)."""
    for item in items:
        yield item


async def collect(stream: AsyncIterable[T]) -> list[T]:
    return [item async for item in stream]


def user(content: str) -> Message:
    return Message("user", (text(content),))


def options(model: str = "deepseek-v4-flash", prompt: str = "hi", **fields: object) -> GenerateOptions:
    """Options for one call with a single user message; ``fields`` set the rest."""
    opts = GenerateOptions(model=model, messages=[user(prompt)])
    for key, value in fields.items():
        setattr(opts, key, value)
    return opts


def kinds(chunks: Iterable[StreamChunk | dict[str, object]]) -> list[str]:
    """The ``type`` of each chunk (typed, or in its JSON form)."""
    return [to_json(chunk)["type"] for chunk in chunks]


class FakeContent:
    """The body of a :class:`FakeResponse`: ``readany()`` hands out ``pieces`` one by one, then ``b""``.

    ``at_eof()`` is always false, so the adapter drains the body after ``[DONE]``.
    """

    def __init__(self, pieces: AsyncIterable[bytes]) -> None:
        self._pieces = aiter(pieces)

    async def readany(self) -> bytes:
        return await anext(self._pieces, b"")

    def at_eof(self) -> bool:
        return False  # unknown until readany() returned b""


class FakeResponse:
    """A scripted stand-in for ``aiohttp.ClientResponse`` (the network is the fake).

    Status 200; the body is ``pieces``; :meth:`close` records the close.
    """

    def __init__(self, pieces: AsyncIterable[bytes]) -> None:
        self.status = 200
        self.closed = False
        self.content = FakeContent(pieces)

    async def read(self) -> bytes:
        pieces = []
        while piece := await self.content.readany():
            pieces.append(piece)
        return b"".join(pieces)

    def close(self) -> None:
        self.closed = True


def fake_session(network: Callable[[str], Awaitable[FakeResponse]]) -> aiohttp.ClientSession:
    """A stand-in for ``aiohttp.ClientSession`` whose ``post`` is ``network(url)`` (faking the network)."""

    class FakeSession:
        async def post(self, url: str, **request: object) -> FakeResponse:
            return await network(url)

    return cast(aiohttp.ClientSession, FakeSession())
