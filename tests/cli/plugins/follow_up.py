"""A test plugin: after each turn of an agent, queue a follow-up message (a continuation), `times` times."""

from __future__ import annotations

from pydantic import BaseModel

from dsh.core.agent import AGENT_TURN_END, Agent
from dsh.core.llm import PluginSource, text
from dsh.core.session import TurnEndReason
from dsh.kernel import Context

name = "follow-up"


class Config(BaseModel):
    times: int = 1000


def apply(ctx: Context, config: Config) -> None:
    sent = [0]

    def again(agent: Agent, turn: int, _reason: TurnEndReason) -> None:
        if sent[0] < config.times:
            sent[0] += 1
            agent.send((text(f"continue after turn {turn}"),), source=PluginSource(plugin=name))

    ctx.on(AGENT_TURN_END, again)
