"""A real dsh stack around a scripted model, for tests of anything built on the loop.

``async with Harness(script) as h:`` loads the real services (llm, sessions, system
prompt, tools, agents, the agent loop and, by default, the invariants plugin as a
balance oracle), registers :class:`~dsh.testing.scripted.ScriptedModel` as model
``"mock"``, and on exit disposes everything and fails if a task is left running.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from dsh.agent_loop import AGENT_LOOP, AgentLoop, ReactLoopAgent
from dsh.core.agent import AGENTS, AgentOptions, AgentRegistry
from dsh.core.llm import LLM, LlmService
from dsh.core.session import SESSIONS, SessionStore
from dsh.core.system_prompt import SYSTEM_PROMPT, SystemPrompt
from dsh.core.tools import TOOLS, ToolRegistry
from dsh.kernel import Context, Fiber
from dsh.plugins import invariants
from dsh.testing.scripted import ScriptedModel, ScriptEntry

MOCK_MODEL = "mock"


class Harness:
    """The full service stack with a scripted model; see the module docstring."""

    def __init__(
        self,
        script: Sequence[ScriptEntry] = (),
        *,
        invariants_plugin: bool = True,
        loop_config: dict[str, Any] | None = None,
        with_loop: bool = True,
    ) -> None:
        self.model = ScriptedModel(script)
        self.ctx = Context()
        self._invariants = invariants_plugin
        self._loop_config = loop_config if loop_config is not None else {"agents": []}
        self._with_loop = with_loop
        self._tasks_before: set[asyncio.Task[Any]] = set()
        self.loop_fiber: Fiber | None = None

    async def __aenter__(self) -> Harness:
        self._tasks_before = asyncio.all_tasks()
        ctx = self.ctx
        await ctx.plugin(LlmService)
        await ctx.plugin(SessionStore)
        await ctx.plugin(SystemPrompt)
        await ctx.plugin(ToolRegistry)
        await ctx.plugin(AgentRegistry)
        if self._invariants:
            await ctx.plugin(invariants)
        ctx[LLM].register_adapter([MOCK_MODEL], self.model)
        if self._with_loop:
            self.loop_fiber = await ctx.plugin(AgentLoop, self._loop_config)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.ctx.dispose()
        await asyncio.sleep(0)
        leftover = [
            task
            for task in asyncio.all_tasks() - self._tasks_before
            if task is not asyncio.current_task() and not task.done()
        ]
        if leftover and kind is None:
            raise AssertionError(f"tasks left running after dispose: {leftover!r}")

    # --------------------------------------------------------------- services
    @property
    def llm(self) -> LlmService:
        return self.ctx[LLM]

    @property
    def sessions(self) -> SessionStore:
        return self.ctx[SESSIONS]

    @property
    def system_prompt(self) -> SystemPrompt:
        return self.ctx[SYSTEM_PROMPT]

    @property
    def tools(self) -> ToolRegistry:
        return self.ctx[TOOLS]

    @property
    def agents(self) -> AgentRegistry:
        return self.ctx[AGENTS]

    @property
    def loop(self) -> AgentLoop:
        return self.ctx[AGENT_LOOP]

    def agent(
        self, agent_id: str = "main", *, model: str | None = MOCK_MODEL, system_prompt: str | None = None
    ) -> ReactLoopAgent:
        """Create a loop agent on a fresh session."""
        return self.loop.create(agent_id, AgentOptions(model=model, system_prompt=system_prompt))
