"""Shared helpers for the agent-loop tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from dsh.agent_loop import ReactLoopAgent
from dsh.core.agent import (
    AGENT_ERROR,
    AGENT_STATUS,
    AGENT_STEP_END,
    AGENT_STEP_START,
    AGENT_TURN_END,
    AGENT_TURN_START,
)
from dsh.core.llm import TextBlock
from dsh.core.session import Session
from dsh.kernel import Context


def text(value: str) -> list[TextBlock]:
    return [{"type": "text", "text": value}]


def types(session: Session) -> list[str]:
    return [event["type"] for event in session.events]


def of_type(session: Session, kind: str) -> list[Any]:
    return [event["data"] for event in session.events if event["type"] == kind]


def turn_end_reasons(session: Session) -> list[dict[str, Any]]:
    return [data["reason"] for data in of_type(session, "turn/end")]


def assistant_texts(session: Session) -> list[str]:
    out: list[str] = []
    for data in of_type(session, "assistant/message"):
        out.append("".join(b.get("text", "") for b in data["content"] if b["type"] == "text"))
    return out


def request_texts(request: Any) -> str:
    """Every text of every message of a model request, joined (for containment checks)."""
    parts: list[str] = []
    for message in request.messages:
        for block in message["content"]:
            if block["type"] == "text":
                parts.append(block["text"])
            elif block["type"] == "tool-result":
                parts.extend(inner.get("text", "") for inner in block["content"])
    return "\n".join(parts)


class Recorder:
    """Records the agent/* events of one agent as ``(name, payload...)`` tuples."""

    def __init__(self, ctx: Context, agent: ReactLoopAgent | None = None) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.statuses: list[str] = []
        self.errors: list[tuple[int, int, BaseException]] = []
        self._agent = agent

        def mine(candidate: Any) -> bool:
            return self._agent is None or candidate is self._agent

        def on_status(agent: Any, status: str) -> None:
            if mine(agent):
                self.statuses.append(status)

        def on_error(agent: Any, turn: int, step: int, error: BaseException) -> None:
            if mine(agent):
                self.errors.append((turn, step, error))

        def named(name: str) -> Callable[..., None]:
            def listener(agent: Any, *payload: Any) -> None:
                if mine(agent):
                    self.events.append((name, *payload))

            return listener

        ctx.on(AGENT_STATUS, on_status)
        ctx.on(AGENT_ERROR, on_error)
        ctx.on(AGENT_TURN_START, named("turn-start"))
        ctx.on(AGENT_TURN_END, named("turn-end"))
        ctx.on(AGENT_STEP_START, named("step-start"))
        ctx.on(AGENT_STEP_END, named("step-end"))

    def names(self) -> list[str]:
        return [event[0] for event in self.events]


async def until(predicate: Callable[[], bool], limit: int = 2000) -> None:
    """Yield to the loop until ``predicate()`` holds (bounded by a number of ticks, not time)."""
    for _ in range(limit):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never became true")
