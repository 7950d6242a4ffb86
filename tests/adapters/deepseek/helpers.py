"""Shared helpers for the DeepSeek adapter tests: byte/payload sources and request options."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable
from typing import TypeVar, cast

from dsh.adapters.http import Headers, HttpClient, HttpResponse, RequestHeaders
from dsh.core.llm import GenerateOptions, Message, StreamChunk, text

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
    return {"role": "user", "content": [text(content)]}


def options(model: str = "deepseek-v4-flash", prompt: str = "hi", **fields: object) -> GenerateOptions:
    """Options for one call with a single user message; ``fields`` set the rest."""
    opts = GenerateOptions(model=model, messages=[user(prompt)])
    for key, value in fields.items():
        setattr(opts, key, value)
    return opts


def kinds(chunks: Iterable[StreamChunk]) -> list[str]:
    return [chunk["type"] for chunk in chunks]


class FakeResponse:
    """A scripted stand-in for :class:`~dsh.adapters.http.HttpResponse` (the network is the fake).

    Status 200; the body is ``pieces``; :meth:`aclose` records the close and raises
    ``close_error`` when one is given.
    """

    def __init__(self, pieces: AsyncIterable[bytes], close_error: Exception | None = None) -> None:
        self.status = 200
        self.headers = Headers([])
        self.closed = False
        self._pieces = aiter(pieces)
        self._close_error = close_error

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._pieces

    async def read(self) -> bytes:
        return b"".join([piece async for piece in self._pieces])

    async def aclose(self) -> None:
        self.closed = True
        if self._close_error is not None:
            raise self._close_error


class FakeClient(HttpClient):
    """An :class:`~dsh.adapters.http.HttpClient` whose ``send`` is ``network(url)`` (faking the network)."""

    def __init__(self, network: Callable[[str], Awaitable[FakeResponse]]) -> None:
        super().__init__()
        self._network = network

    async def send(self, method: str, url: str, headers: RequestHeaders = (), body: bytes = b"") -> HttpResponse:
        return cast(HttpResponse, await self._network(url))
