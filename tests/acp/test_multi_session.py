"""SPEC §14.12 — ``packages/acp/tests/multi-session.spec.ts`` (describe ``acp bridge — RFC 011 multi-session isolation``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dsh.core.llm import GenerateOptions, StreamChunk, TextBlock
from dsh.core.session import UserMessageEvent
from dsh.testing.scripted import HANG, text_response
from tests.acp.client import RpcResponseError, result_of
from tests.acp.helpers import CWD, BridgeStack, bridge_stack


def answer_by_prompt(options: GenerateOptions) -> list[StreamChunk]:
    """Answer ``<prompt> answer`` to whoever asks (script order cannot say which session asks first)."""
    prompt = options.messages[-1].content[0]
    assert type(prompt) is TextBlock
    return text_response(f"{prompt.text} answer")


def text_of(stack: BridgeStack, session_id: str) -> str:
    return "".join(
        update["content"]["text"]
        for sid, update in stack.client.session_updates
        if sid == session_id and update["sessionUpdate"] == "agent_message_chunk"
    )


def chunks_of(session_id: str, count: int = 1) -> Any:
    def seen(client: Any) -> bool:
        return (
            sum(
                1
                for sid, u in client.session_updates
                if sid == session_id and u["sessionUpdate"] == "agent_message_chunk"
            )
            >= count
        )

    return seen


async def two_sessions(stack: BridgeStack) -> tuple[str, str]:
    first = await stack.session()
    second = await stack.client.new_session(CWD)
    return first, second


async def test_two_sessions_stream_concurrently_without_interleaving_their_updates(tmp_path: Path) -> None:
    """two sessions stream concurrently without interleaving their updates"""
    async with bridge_stack(tmp_path, [answer_by_prompt, answer_by_prompt]) as stack:
        alpha, bravo = await two_sessions(stack)
        futures = [stack.client.prompt_future(alpha, "alpha"), stack.client.prompt_future(bravo, "bravo")]
        assert [result_of(await future) for future in futures] == [{"stopReason": "end_turn"}] * 2
        assert text_of(stack, alpha) == "alpha answer"
        assert text_of(stack, bravo) == "bravo answer"
        for session_id in (alpha, bravo):
            log = stack.agent(session_id).session.events
            user = [e.data.content[0] for e in log if type(e) is UserMessageEvent]
            assert len(user) == 1
            assert type(user[0]) is TextBlock
            assert text_of(stack, session_id) == f"{user[0].text} answer"


async def test_cancel_in_one_session_leaves_the_other_session_untouched(tmp_path: Path) -> None:
    """cancel in one session leaves the other session untouched"""
    async with bridge_stack(tmp_path, [HANG, HANG]) as stack:
        alpha, bravo = await two_sessions(stack)
        first = stack.client.prompt_future(alpha, "one")
        await stack.client.wait_for(chunks_of(alpha))
        second = stack.client.prompt_future(bravo, "two")
        await stack.client.wait_for(chunks_of(bravo))
        stack.client.cancel(alpha)
        assert result_of(await first) == {"stopReason": "cancelled"}
        await stack.agent(alpha).when_idle()
        assert not second.done()
        assert stack.agent(bravo).status == "running"
        assert [e.type for e in stack.agent(bravo).session.events].count("turn/end") == 0
        stack.client.cancel(bravo)
        assert result_of(await second) == {"stopReason": "cancelled"}


async def test_enforces_one_in_flight_prompt_per_session_independently(tmp_path: Path) -> None:
    """enforces one in-flight prompt PER session independently"""
    async with bridge_stack(tmp_path, [HANG, text_response("bravo ok")]) as stack:
        alpha, bravo = await two_sessions(stack)
        first = stack.client.prompt_future(alpha, "one")
        await stack.client.wait_for(chunks_of(alpha))
        with pytest.raises(RpcResponseError, match="already in flight"):
            await stack.client.prompt(alpha, "again")
        assert await stack.client.prompt(bravo, "two") == {"stopReason": "end_turn"}
        assert text_of(stack, bravo) == "bravo ok"
        stack.client.cancel(alpha)
        assert result_of(await first) == {"stopReason": "cancelled"}


async def test_a_cancel_for_a_non_existent_session_id_is_a_silent_no_op_does_not_touch_others(tmp_path: Path) -> None:
    """a cancel for a non-existent session id is a silent no-op (does not touch others)"""
    async with bridge_stack(tmp_path, [HANG]) as stack:
        alpha, _bravo = await two_sessions(stack)
        first = stack.client.prompt_future(alpha, "one")
        await stack.client.wait_for(chunks_of(alpha))
        stack.client.cancel("ghost")
        assert await stack.client.initialize() is not None  # a round trip: the cancel has been handled
        assert not first.done()
        assert stack.agent(alpha).status == "running"
        stack.client.cancel(alpha)
        assert result_of(await first) == {"stopReason": "cancelled"}


async def test_disposing_the_whole_bridge_drains_all_live_sessions_to_quiescence(tmp_path: Path) -> None:
    """disposing the whole bridge drains all live sessions to quiescence"""
    async with bridge_stack(tmp_path, [HANG, HANG]) as stack:
        alpha, bravo = await two_sessions(stack)
        agents = [stack.agent(alpha), stack.agent(bravo)]
        first = stack.client.prompt_future(alpha, "one")
        await stack.client.wait_for(chunks_of(alpha))
        second = stack.client.prompt_future(bravo, "two")
        await stack.client.wait_for(chunks_of(bravo))
        await stack.acp_fiber.dispose()
        for agent in agents:
            assert agent.status == "disposed"
            assert [e.type for e in agent.session.events][-1] == "turn/end"
        assert result_of(await first) == {"stopReason": "cancelled"}
        assert result_of(await second) == {"stopReason": "cancelled"}
        assert stack.bridge.session_ids == []
        assert stack.agents.list() == []
