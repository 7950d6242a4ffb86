"""Noticing a model that repeats one tool call, and telling it so.

A :class:`RepeatGuard` sits on the ``tools/execute`` waterfall. For each agent it
keeps the current *chain*: the last call's tool name and arguments (canonical JSON:
keys sorted) and how many times in a row, in the current turn, the agent has made
exactly that call. A different call starts a new chain; a new turn (``agent/turn-start``)
forgets it. When a chain reaches ``threshold`` calls, and again at every further
``threshold`` calls, the guard steers the agent with an advisory note
(source ``{kind: "plugin", plugin: "repeat-guard"}``). The loop logs steering as a
``steering/message`` before the step closes, so the model sees the note at its next
request and a resumed session derives the same history.

The guard never blocks, delays or changes a call: it counts when the call starts
(so the calls of a parallel batch count in the model's order, the order they start
in) and delegates at once. A call without an agent is not counted. A note that
cannot be queued (the agent is disposed, an ``agent/queued`` listener raised) is
logged as a warning and the call goes on.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field

from dsh.core.agent import AGENT_DISPOSED, AGENT_TURN_START, Agent
from dsh.core.llm import PluginSource, text
from dsh.core.tools import TOOLS_EXECUTE, ToolExecution, ToolExecutionResult
from dsh.kernel import Context

PLUGIN_NAME = "repeat-guard"

SOURCE = PluginSource(plugin=PLUGIN_NAME)
"""The source of every note."""

PREVIEW_CHARS = 200
"""How much of the repeated arguments a note quotes."""


class RepeatGuardConfig(BaseModel):
    """``threshold``: how many identical calls in a row earn a note (at least 2, default 3)."""

    model_config = ConfigDict(extra="forbid")

    threshold: int = Field(default=3, ge=2)


@dataclass(slots=True)
class _Chain:
    name: str
    arguments: str
    count: int


def canonical_arguments(arguments: Any) -> str:
    """``arguments`` as compact JSON with sorted keys (a value JSON cannot hold is shown by its repr)."""
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)


def repeat_note(name: str, arguments: str, count: int) -> str:
    """The advisory note for ``count`` identical calls of ``name`` with ``arguments``."""
    preview = arguments if len(arguments) <= PREVIEW_CHARS else arguments[:PREVIEW_CHARS] + "…"
    return (
        f"Note: this is call number {count} in a row of {name} with the same arguments ({preview}) in this "
        "turn. Repeating it will most likely return the same result again. Read the last result, then "
        "change the arguments, try another approach, or finish if you have what you need."
    )


class RepeatGuard:
    """The per-agent chains and the listeners that keep them (see the module docstring)."""

    def __init__(self, ctx: Context, threshold: int) -> None:
        self.ctx = ctx
        self.threshold = threshold
        self.chains: dict[object, _Chain] = {}
        ctx.on(TOOLS_EXECUTE, self.on_execute)
        ctx.on(AGENT_TURN_START, self.on_turn_start)
        ctx.on(AGENT_DISPOSED, self.forget)

    def on_turn_start(self, agent: Agent, _turn: int) -> None:
        self.chains.pop(agent, None)

    def forget(self, agent: Agent) -> None:
        self.chains.pop(agent, None)

    def on_execute(
        self, execution: ToolExecution, delegate: Callable[[], Awaitable[ToolExecutionResult]]
    ) -> Awaitable[ToolExecutionResult]:
        agent = execution.agent
        if agent is not None:
            self.count(agent, execution.name, canonical_arguments(execution.arguments))
        return delegate()

    def count(self, agent: object, name: str, arguments: str) -> None:
        """Add one call to ``agent``'s chain; steer the note when the chain reaches a multiple of the threshold."""
        chain = self.chains.get(agent)
        if chain is None or chain.name != name or chain.arguments != arguments:
            self.chains[agent] = _Chain(name, arguments, 1)
            return
        chain.count += 1
        if chain.count % self.threshold == 0:
            try:
                cast(Agent, agent).steer((text(repeat_note(name, arguments, chain.count)),), source=SOURCE)
            except Exception as error:
                self.ctx.logger.warn("%s: could not add the note on repeated %s calls: %s", PLUGIN_NAME, name, error)
