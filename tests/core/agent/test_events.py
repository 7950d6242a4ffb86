"""The agent/* event catalog: names, dispatch modes, payload order and documentation (SPEC §7.2)."""

from __future__ import annotations

import typing
from collections.abc import Awaitable

import pytest

import dsh.core.agent.events as catalog
from dsh.core.agent import (
    AGENT_QUEUED,
    AGENT_REQUEST,
    AGENT_TURN_CONTINUATION,
    Agent,
    AgentStatus,
    QueuedInfo,
    RequestFailure,
    RetryNotice,
)
from dsh.core.llm import ContentBlock, GenerateOptions, Message, MessageSource, StreamChunk, UserSource, text
from dsh.core.session import TurnEndReason
from dsh.kernel import Context, EmitEvent, EventDescriptor, WaterfallEvent
from tests.core.agent.helpers import FakeAgent

EXPECTED: dict[str, tuple[str, str, tuple[object, ...], object]] = {
    "AGENT_CREATED": ("agent/created", "emit", (Agent,), None),
    "AGENT_DISPOSED": ("agent/disposed", "emit", (Agent,), None),
    "AGENT_STATUS": ("agent/status", "emit", (Agent, AgentStatus), None),
    "AGENT_QUEUED": ("agent/queued", "emit", (Agent, tuple[ContentBlock, ...], QueuedInfo), None),
    "AGENT_TURN_START": ("agent/turn-start", "emit", (Agent, int), None),
    "AGENT_TURN_END": ("agent/turn-end", "emit", (Agent, int, TurnEndReason), None),
    "AGENT_STEP_START": ("agent/step-start", "emit", (Agent, int, int), None),
    "AGENT_STEP_END": ("agent/step-end", "emit", (Agent, int, int), None),
    "AGENT_REQUEST": (
        "agent/request",
        "waterfall",
        (Agent, int, int, GenerateOptions),
        Awaitable[GenerateOptions],
    ),
    "AGENT_REQUEST_ERROR": ("agent/request-error", "waterfall", (Agent, int, int, RequestFailure), Awaitable[bool]),
    "AGENT_RETRY": ("agent/retry", "emit", (Agent, int, int, RetryNotice), None),
    "AGENT_STEP_RESULT": ("agent/step-result", "waterfall", (Agent, int, int, Message), Awaitable[Message]),
    "AGENT_TURN_CONTINUATION": ("agent/turn-continuation", "waterfall", (Agent, int, bool), Awaitable[bool]),
    "AGENT_STREAM_CHUNK": ("agent/stream-chunk", "emit", (Agent, int, int, StreamChunk), None),
    "AGENT_STEERING": ("agent/steering", "emit", (Agent, int, tuple[ContentBlock, ...], MessageSource), None),
    "AGENT_ERROR": ("agent/error", "emit", (Agent, int, int, BaseException), None),
}


def test_the_catalog_declares_every_agent_event_and_nothing_else() -> None:
    """Every agent/* event of SPEC §7.2 is declared exactly once."""
    declared = {name for name, value in vars(catalog).items() if isinstance(value, EventDescriptor)}
    assert declared == set(EXPECTED)


@pytest.mark.parametrize("constant", sorted(EXPECTED))
def test_each_event_has_its_name_mode_payload_order_and_a_contract(constant: str) -> None:
    """Name, dispatch mode, payload types in order, and a doc stating the contract."""
    name, mode, payload, result = EXPECTED[constant]
    descriptor = getattr(catalog, constant)
    hints = typing.get_type_hints(catalog)

    assert descriptor.name == name
    assert descriptor.mode == mode
    assert isinstance(descriptor, WaterfallEvent if mode == "waterfall" else EmitEvent)
    assert descriptor.doc.startswith(mode)
    args = typing.get_args(hints[constant])
    assert tuple(args[0]) == payload
    if result is not None:
        assert args[1] == result


async def test_agent_queued_carries_the_resolved_source_and_the_queue() -> None:
    """agent/queued delivers (agent, content, QueuedInfo(source, steering)) in that order."""
    root = Context()
    seen: list[tuple[Agent, tuple[ContentBlock, ...], QueuedInfo]] = []
    root.on(AGENT_QUEUED, lambda agent, content, info: seen.append((agent, content, info)))
    agent = FakeAgent("q")
    content = (text("hi"),)

    root.emit(AGENT_QUEUED, agent, content, QueuedInfo(source=UserSource(), steering=False))

    assert seen == [(agent, content, QueuedInfo(source=UserSource(), steering=False))]
    [(_, _, info)] = seen
    assert (info.source, info.steering) == (UserSource(), False)
    with pytest.raises(AttributeError, match="immutable"):
        info.steering = True  # type: ignore[misc]


async def test_waterfall_listeners_can_rewrite_the_request_and_veto_continuation() -> None:
    """agent/request passes options down the chain; agent/turn-continuation can short-circuit."""
    root = Context()
    agent = FakeAgent("w")

    def pick_model(
        _agent: Agent, _turn: int, _step: int, options: GenerateOptions, next: typing.Callable[[], typing.Any]
    ) -> typing.Any:
        options.model = "picked"
        return next()

    async def veto(_agent: Agent, _turn: int, _default: bool, _next: typing.Callable[[], typing.Any]) -> bool:
        return False

    root.on(AGENT_REQUEST, pick_model)
    root.on(AGENT_TURN_CONTINUATION, veto)
    options = GenerateOptions(model="", messages=[])

    async def keep() -> GenerateOptions:
        return options

    async def go_on() -> bool:
        return True

    assert (await root.waterfall(AGENT_REQUEST, agent, 1, 1, options, inner=keep)).model == "picked"
    assert await root.waterfall(AGENT_TURN_CONTINUATION, agent, 1, True, inner=go_on) is False
