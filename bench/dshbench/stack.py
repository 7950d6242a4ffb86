"""The real dsh stack a benchmark job runs in its own process.

:func:`boot` loads, in the order of ``examples/base-core.yml``, the core services
(llm, sessions, system prompt, tools, agents), optionally the invariants plugin (dev
mode, as the examples load it), the local bash executor and the bash tools,
a persistence backend, the DeepSeek adapter pointed at a wire server with the
``llm-retry`` policy (idle: the wire server never fails), optionally the
``compaction`` plugin (idle: the window is never reached), an in-process no-op tool,
and the agent loop (whose parallel tool-call pool is idle with one call per step).
Only the model is fake (the wire server, in the parent process); everything else is
the code that ships.

The DeepSeek adapter is the ``llm-deepseek`` plugin as it ships (one aiohttp session,
its default pool), pointed at the wire server and serving :data:`MODEL`.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import Any, Literal

import dsh.adapters.deepseek as llm_deepseek
import dsh.plugins.gc_tuning as gc_tuning
import dsh.plugins.invariants as invariants
import dsh.plugins.llm_admission as llm_admission
import dsh.plugins.llm_retry as llm_retry
import dsh.plugins.tool_bash as tool_bash
import dsh.plugins.tool_fs as tool_fs
from dsh.agent_loop import AgentLoop
from dsh.core.agent import AgentRegistry
from dsh.core.llm import ContentBlock, LlmService, text
from dsh.core.session import SessionStore
from dsh.core.system_prompt import SystemPrompt
from dsh.core.tools import TOOLS, ToolExecution, ToolRegistry, define_tool
from dsh.kernel import Context, PluginSpec
from dsh.plugins.bash_local import LocalBashExecutor
from dsh.plugins.compaction import Compaction
from dsh.plugins.fs_local import LocalFileSystem
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl
from dsh.plugins.persistence_sqlite import SessionPersistenceSqlite

MODEL = "bench-model"
"""The model name every bench agent asks for; the wire server answers whatever it is."""

UNUSED_URL = "http://127.0.0.1:9"
"""A base URL for stacks whose agents never call the model (the adapter is loaded as in a real tree)."""

NOOP_TOOL = "noop"
"""The in-process tool that does nothing (it answers ``ok``)."""

Persistence = Literal["none", "jsonl", "sqlite", "postgres"]


@dataclass(frozen=True)
class StackOptions:
    """What to load besides the core services; see the module docstring.

    ``base_url`` registers the DeepSeek adapter for :data:`MODEL`; ``store`` is the
    JSONL root directory, the SQLite database path or the PostgreSQL URL (required
    unless ``persistence`` is ``"none"``); ``pg_schema`` is the PostgreSQL schema.
    ``fs_root`` loads the local filesystem (rooted there) and the file tools.
    ``freeze_startup`` freezes the start-up objects as the ``dsh`` process does (see
    :func:`boot`). ``compaction`` loads the compaction plugin (with the adapter).
    ``admission`` loads ``llm-admission`` (its defaults), as the built-in profiles do.
    ``gc_tuning`` loads ``gc-tuning`` last, as a ``dsh batch`` worker does once its tree
    booted: the collector's thresholds, the boot frozen.
    """

    base_url: str | None = None
    persistence: Persistence = "none"
    store: str | None = None
    pg_schema: str = "dsh"
    invariants: bool = True
    bash: bool = True
    noop_tool: bool = False
    fs_root: str | None = None
    loop: bool = True
    freeze_startup: bool = False
    compaction: bool = False
    admission: bool = False
    gc_tuning: bool = False


async def _noop(_args: Any, _execution: ToolExecution) -> tuple[ContentBlock, ...]:
    return (text("ok"),)


def _noop_tool(ctx: Context, _config: object) -> None:
    ctx[TOOLS].register(define_tool(NOOP_TOOL, "Does nothing and answers ok.", {}, _noop))


NOOP_PLUGIN = PluginSpec(name="bench-noop-tool", apply=_noop_tool, inject=["tools"])


_FROZEN: list[bool] = []
"""Non-empty once :func:`boot` froze the start-up objects of this process."""


async def boot(options: StackOptions) -> Context:
    """A root context with the stack of ``options`` started; dispose it with ``await ctx.dispose()``.

    With ``freeze_startup`` (the turn jobs: they mirror ``dsh run``), everything alive
    after the first boot of the process is frozen out of the garbage collector's reach
    (``gc.freeze()``), as the ``dsh`` process does once after its boot
    (:class:`dsh.cli.startup.CollectorPolicy`), so the measured turns pay for their own
    garbage, not for full collections walking the start-up objects. The storage jobs do
    not freeze: their processes hold the logs built for the measurement, which a real
    process would not have frozen.
    """
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
        elif options.persistence == "postgres":
            from dsh.plugins.persistence_postgres import SessionPersistencePostgres  # psycopg: only when asked

            await ctx.plugin(SessionPersistencePostgres, {"url": options.store, "pg_schema": options.pg_schema})
        else:
            await ctx.plugin(SessionPersistenceSqlite, {"path": options.store})
    if options.base_url is not None:
        await ctx.plugin(llm_deepseek, {"apiKey": "bench-key", "baseURL": options.base_url, "models": [MODEL]})
        await ctx.plugin(llm_retry)
        if options.compaction:
            await ctx.plugin(Compaction, {})
    if options.noop_tool:
        await ctx.plugin(NOOP_PLUGIN)
    if options.fs_root is not None:
        await ctx.plugin(LocalFileSystem, {"root": options.fs_root})
        await ctx.plugin(tool_fs)
    if options.admission:
        await ctx.plugin(llm_admission)
    if options.loop:
        await ctx.plugin(AgentLoop, {"agents": []})
    if options.gc_tuning:
        await ctx.plugin(gc_tuning)
    if options.freeze_startup and not _FROZEN:
        _FROZEN.append(True)
        gc.freeze()
    return ctx
