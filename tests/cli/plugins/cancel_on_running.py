"""A test plugin: cancels every agent the moment it starts running (before its turn is logged)."""

from __future__ import annotations

from dsh.core.agent import AGENT_STATUS, Agent
from dsh.kernel import Context

name = "cancel-on-running"


def apply(ctx: Context, _config: object) -> None:
    def on_status(agent: Agent, status: str) -> None:
        if status == "running":
            agent.cancel("refused")

    ctx.on(AGENT_STATUS, on_status)
