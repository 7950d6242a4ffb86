"""Shared helpers for the agent-loop tests."""

from __future__ import annotations

import asyncio
import json
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
from dsh.core.errors import HarnessError
from dsh.core.llm import (
    BlockEndChunk,
    BlockStartChunk,
    ContentBlock,
    FinishChunk,
    StreamChunk,
    TextBlock,
    ToolCallBlock,
    ToolCallDeltaChunk,
    ToolCallsFinish,
    ToolResultBlock,
    text_of,
)
from dsh.core.session import AssistantMessageEvent, Session
from dsh.kernel import Context
from dsh.testing.logs import data_json, event_types


def text(value: str) -> tuple[ContentBlock, ...]:
    return (TextBlock(text=value),)


def types(session: Session) -> list[str]:
    return event_types(session)


def of_type(session: Session, kind: str) -> list[Any]:
    """The ``data`` of every ``kind`` event, as JSON."""
    return data_json(session, kind)


def turn_end_reasons(session: Session) -> list[dict[str, Any]]:
    return [data["reason"] for data in of_type(session, "turn/end")]


def assistant_texts(session: Session) -> list[str]:
    return [text_of(event.data.content) for event in session.events if type(event) is AssistantMessageEvent]


def request_texts(request: Any) -> str:
    """Every text of every message of a model request, joined (for containment checks)."""
    parts: list[str] = []
    for message in request.messages:
        for block in message.content:
            if type(block) is TextBlock:
                parts.append(block.text)
            elif type(block) is ToolResultBlock:
                parts.append(text_of(block.content))
    return "\n".join(parts)


class RefusingSession(Session):
    """A session whose next ``refusals`` appends of ``refused`` raise before anything is stored.

    Typed appends cannot be refused by their data any more, so this stands in for an
    append that fails before its event is logged.
    """

    __slots__ = ("refusals", "refused")

    def __init__(self, id: str, refused: type[Any], refusals: int = 1) -> None:
        super().__init__(id)
        self.refused = refused
        self.refusals = refusals

    def append(self, kind: Any, data: Any) -> Any:
        if kind is self.refused and self.refusals:
            self.refusals -= 1
            raise HarnessError(f"{kind.__name__} refused", "INVALID_EVENT_DATA")
        return super().append(kind, data)


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


def tool_calls_response(*calls: tuple[str, str, dict[str, Any]]) -> list[StreamChunk]:
    """One assistant message asking for several tool calls ``(call_id, name, arguments)``, in that order."""
    chunks: list[StreamChunk] = []
    for index, (call_id, name, arguments) in enumerate(calls):
        raw = json.dumps(arguments, separators=(",", ":"))
        chunks.append(BlockStartChunk(index=index, block_type="tool-call"))
        chunks.append(ToolCallDeltaChunk(index=index, id=call_id, name=name, arguments_delta=raw))
        chunks.append(BlockEndChunk(index=index, block=ToolCallBlock(id=call_id, name=name, arguments=raw)))
    chunks.append(FinishChunk(reason=ToolCallsFinish()))
    return chunks
