"""A fake clock and a real stack (loop, llm-deepseek or llm-openai, llm-retry) against a wire server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import dsh.adapters.deepseek as deepseek
import dsh.adapters.openai as llm_openai
from dsh.agent_loop import ReactLoopAgent
from dsh.core.agent import AGENT_RETRY, Agent, AgentOptions, RetryNotice
from dsh.core.llm import text
from dsh.kernel import Fiber
from dsh.plugins.llm_retry import retry_plugin
from dsh.testing.harness import Harness
from dsh.testing.logs import data_json
from dsh.testing.wire import Entry, WireServer

MODEL = "wire"


@dataclass
class FakeClock:
    """Records each wait; answers at once, or (``hold``) only when cancelled."""

    hold: bool = False
    waits: list[float] = field(default_factory=list)
    waiting: asyncio.Event = field(default_factory=asyncio.Event)

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.waiting.set()
        if self.hold:
            await asyncio.get_running_loop().create_future()  # until cancelled


def highest(low: float, high: float) -> float:
    """A jitter draw that always takes the bound (so a test knows the delay)."""
    return high


@dataclass
class Stack:
    harness: Harness
    server: WireServer
    clock: FakeClock
    agent: ReactLoopAgent
    retry: Fiber
    notices: list[RetryNotice]

    async def turn(self, prompt: str = "hi") -> None:
        """Send ``prompt`` and wait for the agent to go idle (a safety timeout, no assertion)."""
        self.agent.send([text(prompt)])
        async with asyncio.timeout(10):
            await self.agent.when_idle()

    def data(self, kind: str) -> list[Any]:
        return data_json(self.agent.session, kind)

    def bodies(self) -> list[Any]:
        return [request.json for request in self.server.requests if request.path.endswith("/chat/completions")]


@asynccontextmanager
async def stack(
    *entries: Entry,
    config: dict[str, Any] | None = None,
    hold: bool = False,
    adapter: str = "deepseek",
) -> AsyncIterator[Stack]:
    """The loop (with invariants), one adapter serving :data:`MODEL` from a wire server, and llm-retry."""
    clock = FakeClock(hold=hold)
    async with WireServer(entries) as server, Harness() as harness:
        if adapter == "deepseek":
            await harness.ctx.plugin(deepseek, {"apiKey": "sk-test", "baseURL": server.base_url, "models": [MODEL]})
        else:
            await harness.ctx.plugin(llm_openai, {"apiKey": "sk-test", "baseURL": server.base_url, "models": [MODEL]})
        retry = await harness.ctx.plugin(retry_plugin(clock.sleep, highest), config or {})
        notices: list[RetryNotice] = []

        def on_retry(_agent: Agent, _turn: int, _step: int, notice: RetryNotice) -> None:
            notices.append(notice)

        harness.ctx.on(AGENT_RETRY, on_retry)
        agent = harness.loop.create("main", AgentOptions(model=MODEL))
        yield Stack(harness, server, clock, agent, retry, notices)
