"""The real dsh stack a benchmark job runs in its own process.

:func:`boot` loads, in the order of ``examples/base-core.yml``, the core services
(llm, sessions, system prompt, tools, agents), optionally the invariants plugin (dev
mode, freezing, as the examples load it), the local bash executor and the bash tools,
a persistence backend, the DeepSeek adapter pointed at a wire server, an in-process
no-op tool, and the agent loop. Only the model is fake (the wire server, in the parent
process); everything else is the code that ships.

One deliberate deviation: the DeepSeek adapter is given an ``httpx.AsyncClient``
with an unbounded connection pool. The shipped adapter leaks one pooled connection
per completed stream (see ``docs/benchmarks.md``, hot spot 1), so with the default pool
of 100 connections the 101st model call of a process waits 30 s and fails with
``PoolTimeout``; a 201-step turn or 100 concurrent agents cannot finish without this.
The client is closed when the stack is disposed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import httpx

import dsh.plugins.invariants as invariants
import dsh.plugins.tool_bash as tool_bash
from dsh.adapters.deepseek import DEFAULT_TIMEOUT, DeepSeekAdapter
from dsh.agent_loop import AgentLoop
from dsh.core.agent import AgentRegistry
from dsh.core.llm import LLM, ContentBlock, LlmService, text
from dsh.core.session import SessionStore
from dsh.core.system_prompt import SystemPrompt
from dsh.core.tools import TOOLS, ToolExecution, ToolRegistry, define_tool
from dsh.kernel import Context, PluginSpec
from dsh.plugins.bash_local import LocalBashExecutor
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl
from dsh.plugins.persistence_sqlite import SessionPersistenceSqlite

MODEL = "bench-model"
"""The model name every bench agent asks for; the wire server answers whatever it is."""

UNUSED_URL = "http://127.0.0.1:9"
"""A base URL for stacks whose agents never call the model (the adapter is loaded as in a real tree)."""

NOOP_TOOL = "noop"
"""The in-process tool that does nothing (it answers ``ok``)."""

Persistence = Literal["none", "jsonl", "sqlite"]


@dataclass(frozen=True)
class StackOptions:
    """What to load besides the core services; see the module docstring.

    ``base_url`` registers the DeepSeek adapter for :data:`MODEL`; ``store`` is the
    JSONL root directory or the SQLite database path (required unless ``persistence``
    is ``"none"``).
    """

    base_url: str | None = None
    persistence: Persistence = "none"
    store: str | None = None
    invariants: bool = True
    bash: bool = True
    noop_tool: bool = False
    loop: bool = True


def _wire_adapter(base_url: str) -> PluginSpec:
    def apply(ctx: Context, _config: object) -> DeepSeekAdapter:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
        client = httpx.AsyncClient(timeout=DEFAULT_TIMEOUT, limits=limits)
        ctx.effect(lambda: client.aclose, "bench http client")
        adapter = DeepSeekAdapter("bench-key", base_url, models=[MODEL], client=client)
        ctx[LLM].register_adapter([MODEL], adapter)
        return adapter

    return PluginSpec(name="bench-deepseek", apply=apply, inject=["llm"])


async def _noop(_args: Any, _execution: ToolExecution) -> list[ContentBlock]:
    return [text("ok")]


def _noop_tool(ctx: Context, _config: object) -> None:
    ctx[TOOLS].register(define_tool(NOOP_TOOL, "Does nothing and answers ok.", {}, _noop))


NOOP_PLUGIN = PluginSpec(name="bench-noop-tool", apply=_noop_tool, inject=["tools"])


async def boot(options: StackOptions) -> Context:
    """A root context with the stack of ``options`` started; dispose it with ``await ctx.dispose()``."""
    ctx = Context()
    for service in (LlmService, SessionStore, SystemPrompt, ToolRegistry, AgentRegistry):
        await ctx.plugin(service)
    if options.invariants:
        await ctx.plugin(invariants)
    if options.bash:
        await ctx.plugin(LocalBashExecutor, {"timeoutMs": 60000})
        await ctx.plugin(tool_bash)
    if options.persistence != "none":
        if options.store is None:
            raise ValueError(f"persistence {options.persistence!r} needs StackOptions.store (a directory or file)")
        if options.persistence == "jsonl":
            await ctx.plugin(SessionPersistenceJsonl, {"root": options.store})
        else:
            await ctx.plugin(SessionPersistenceSqlite, {"path": options.store})
    if options.base_url is not None:
        await ctx.plugin(_wire_adapter(options.base_url))
    if options.noop_tool:
        await ctx.plugin(NOOP_PLUGIN)
    if options.loop:
        await ctx.plugin(AgentLoop, {"agents": []})
    return ctx
