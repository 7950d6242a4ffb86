"""Fakes for the outside world of a ui-stdio chat: typed lines, the terminal, the exit timer."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from dsh.core.agent import AGENT_QUEUED, Agent, QueuedInfo
from dsh.core.llm import ContentBlock, text_of
from dsh.kernel import Context, Effect
from dsh.plugins.ui_stdio import StdioChatConfig, StdioRuntime, create_stdio_chat

_END = object()


class Keyboard:
    """An async line source the test types into; :meth:`close` is end of input."""

    def __init__(self) -> None:
        self._queue: asyncio.Queue[object] = asyncio.Queue()
        self._waiting = asyncio.Event()
        self.ended = asyncio.Event()
        """Set when the reader took the end of input (it has handled it by the time a waiter resumes)."""

    def type(self, *lines: str) -> None:
        self._waiting.clear()
        for line in lines:
            self._queue.put_nowait(line)

    def close(self) -> None:
        self._waiting.clear()
        self._queue.put_nowait(_END)

    def __aiter__(self) -> AsyncIterator[str]:
        return self

    async def __anext__(self) -> str:
        if self._queue.empty():
            self._waiting.set()
        item = await self._queue.get()
        if item is _END:
            self.ended.set()
            raise StopAsyncIteration
        assert isinstance(item, str)
        return item

    async def drained(self) -> None:
        """Return once the reader handled every line typed so far and waits for the next one."""
        await self._waiting.wait()


@dataclass
class FakeTimerHandle:
    delay: float
    callback: Callable[[], object]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


@dataclass
class FakeTimer:
    """Records scheduled callbacks; :meth:`fire` runs the ones not cancelled (the clock "passes")."""

    scheduled: list[FakeTimerHandle] = field(default_factory=list)
    armed: asyncio.Event = field(default_factory=asyncio.Event)

    def __call__(self, delay: float, callback: Callable[[], object]) -> FakeTimerHandle:
        handle = FakeTimerHandle(delay, callback)
        self.scheduled.append(handle)
        self.armed.set()
        return handle

    def fire(self) -> None:
        for handle in list(self.scheduled):
            if not handle.cancelled:
                handle.callback()


class Terminal(io.StringIO):
    """The chat's output; counts flushes."""

    flushes = 0

    def flush(self) -> None:
        self.flushes += 1
        super().flush()


@dataclass
class Chat:
    """One chat under test and its fake world."""

    keyboard: Keyboard
    terminal: Terminal
    timer: FakeTimer
    exits: list[int]
    effect: Effect | None = None

    @property
    def runtime(self) -> StdioRuntime:
        return StdioRuntime(input=self.keyboard, output=self.terminal, exit=self.exits.append, timer=self.timer)

    @property
    def output(self) -> str:
        return self.terminal.getvalue()

    async def dispose(self) -> None:
        assert self.effect is not None
        pending = self.effect()
        if pending is not None:
            await pending


def new_chat() -> Chat:
    return Chat(Keyboard(), Terminal(), FakeTimer(), [])


def start_chat(ctx: Context, config: StdioChatConfig | dict[str, Any] | None = None) -> Chat:
    """A chat on ``ctx`` with fake input, output and timer (config defaults to ``{}``)."""
    chat = new_chat()
    chat.effect = create_stdio_chat(ctx, config if config is not None else {}, chat.runtime)
    return chat


class QueuedLog:
    """Records ``agent/queued`` as ``(agent id, text, steering)``."""

    def __init__(self, ctx: Context) -> None:
        self.entries: list[tuple[str, str, bool]] = []
        ctx.on(AGENT_QUEUED, self._on_queued)

    def _on_queued(self, agent: Agent, content: tuple[ContentBlock, ...], info: QueuedInfo) -> None:
        self.entries.append((agent.id, text_of(content), info.steering))
