"""The coding-agent stack in-process (SPEC §16.3 ``tests/harness.ts``): the real services, the
real ``llm-deepseek`` adapter, a real local bash in ``workdir`` and, optionally, JSONL
persistence. The model is the real DeepSeek API (``DEEPSEEK_API_KEY``) or a local
:class:`~dsh.testing.wire.WireServer` speaking its wire protocol.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import dsh.adapters.deepseek as llm_deepseek
import dsh.plugins.tool_bash as tool_bash
from dsh.agent_loop import AgentLoop
from dsh.core.agent import AGENTS, Agent, AgentOptions, AgentRegistry, CreateAgentOptions, ResumeAgentOptions
from dsh.core.llm import LlmService
from dsh.core.session import SessionEvent, SessionMeta, SessionStore
from dsh.core.system_prompt import SystemPrompt
from dsh.core.tools import ToolRegistry
from dsh.kernel import Context, parse_tree
from dsh.plugins.bash_local import LocalBashExecutor
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl
from dsh.testing.logs import data_json

PROJECT = Path(__file__).resolve().parents[3]
EXAMPLE = PROJECT / "examples" / "coding-agent"
START = EXAMPLE / "start.py"
TREE = EXAMPLE / "tree.yml"
MODEL = "deepseek-v4-flash"
REAL_KEY = os.environ.get("DEEPSEEK_API_KEY")


def tree_system_prompt() -> str:
    """The system prompt of the ``main`` agent in the example's ``tree.yml`` (one source of truth)."""
    (loop,) = [entry for entry in parse_tree(TREE) if entry.name == "agent-loop"]
    assert loop.config is not None
    prompt: str = loop.config["agents"][0]["systemPrompt"]
    return prompt


SYSTEM_PROMPT = tree_system_prompt()


@dataclass(frozen=True)
class Model:
    """Where the adapter sends requests: ``base_url`` None means the public API."""

    api_key: str
    base_url: str | None


def pick_model(kind: str, wire_url: str) -> Model:
    """``"wire"`` -> the local server (dummy key); ``"deepseek"`` -> the real API, skipped without a key."""
    if kind == "deepseek":
        if not REAL_KEY:
            pytest.skip("needs DEEPSEEK_API_KEY (a real model call)")
        return Model(REAL_KEY, None)
    return Model("dummy", wire_url)


class CodingHarness:
    """One booted stack; see :func:`coding_harness`."""

    def __init__(self, ctx: Context, workdir: Path) -> None:
        self.ctx = ctx
        self.workdir = workdir

    def create(self, session_id: str, agent_id: str = "main") -> Agent:
        options = CreateAgentOptions(
            agent_id=agent_id,
            session_id=session_id,
            meta=SessionMeta(cwd=str(self.workdir)),
            agent_options=AgentOptions(model=MODEL, system_prompt=SYSTEM_PROMPT),
        )
        return self.ctx[AGENTS].create(options)

    async def resume(self, session_id: str, agent_id: str = "main") -> Agent:
        options = ResumeAgentOptions(
            agent_id=agent_id,
            resume_session_id=session_id,
            agent_options=AgentOptions(model=MODEL, system_prompt=SYSTEM_PROMPT),
        )
        return await self.ctx[AGENTS].resume(options)


@asynccontextmanager
async def coding_harness(
    workdir: Path, model: Model, persistence_root: Path | None = None
) -> AsyncIterator[CodingHarness]:
    """Boot the stack (persistence last, when a root is given) and dispose it all on exit."""
    ctx = Context()
    try:
        for plugin in (LlmService, SessionStore, SystemPrompt, ToolRegistry, AgentRegistry):
            await ctx.plugin(plugin)
        await ctx.plugin(AgentLoop, {"agents": []})
        deepseek: dict[str, Any] = {"apiKey": model.api_key, "models": [MODEL]}
        if model.base_url is not None:
            deepseek["baseURL"] = model.base_url
        await ctx.plugin(llm_deepseek, deepseek)
        await ctx.plugin(LocalBashExecutor, {"cwd": str(workdir), "timeoutMs": 30000})
        await ctx.plugin(tool_bash)
        if persistence_root is not None:
            await ctx.plugin(SessionPersistenceJsonl, {"root": str(persistence_root)})
        yield CodingHarness(ctx, workdir)
    finally:
        await ctx.dispose()


async def wait_for_idle(agent: Agent) -> None:
    """Return once the agent has run everything it was given."""
    await agent.when_idle()


def of_type(events: Sequence[SessionEvent], kind: str) -> list[Any]:
    """The ``data`` of every event of type ``kind``, as JSON."""
    return data_json(events, kind)


def final_text(events: Sequence[SessionEvent]) -> str:
    """The text of the last ``assistant/message`` (empty when there is none)."""
    messages = of_type(events, "assistant/message")
    if not messages:
        return ""
    return "".join(block["text"] for block in messages[-1]["content"] if block["type"] == "text")


def result_text(data: Any) -> str:
    return "".join(block.get("text", "") for block in data["content"])
