"""SPEC §14.9 — ``packages/acp/tests/dispose.spec.ts`` (describe ``acp bridge — disposal & HMR safety``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from dsh.acp import DISPOSED_MESSAGE, RequestError
from dsh.core.agent import AGENT_STATUS
from dsh.core.llm import text
from dsh.core.session import SESSION_EVENT, AbortedReason, CompletedReason, DisposedReason, TurnEndEvent
from dsh.kernel import FiberState
from dsh.testing.scripted import HANG, text_response
from tests.acp.client import RpcResponseError, result_of
from tests.acp.helpers import CWD, bridge_stack, saw_chunk


async def test_disposal_reaches_quiescence_a_running_turn_is_aborted_and_awaited_before_dispose_returns(
    tmp_path: Path,
) -> None:
    """disposal reaches quiescence: a running turn is aborted and awaited before dispose returns"""
    async with bridge_stack(tmp_path, [HANG]) as stack:
        session_id = await stack.session()
        agent = stack.agent(session_id)
        prompt = stack.client.prompt_future(session_id, "go")
        await stack.client.wait_for(saw_chunk())
        await stack.acp_fiber.dispose()
        # by the time dispose returned, the turn was closed and the agent stopped
        assert agent.status == "disposed"
        ends = [e.data for e in agent.session.events if type(e) is TurnEndEvent]
        assert len(ends) == 1
        assert type(ends[0].reason) in (AbortedReason, DisposedReason)
        assert result_of(await prompt) == {"stopReason": "cancelled"}
        assert stack.bridge.closed


async def test_after_an_acp_only_hmr_dispose_a_late_session_new_creates_no_orphan_agent_closed_guard(
    tmp_path: Path,
) -> None:
    """after an ACP-only HMR dispose, a late session/new creates no orphan agent (closed guard)"""
    async with bridge_stack(tmp_path) as stack:
        await stack.client.initialize()
        await stack.acp_fiber.dispose()
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.new_session(CWD)
        assert caught.value.error == {"code": -32603, "message": f"Internal error: {DISPOSED_MESSAGE}"}
        with pytest.raises(RpcResponseError, match="disposed"):
            await stack.client.prompt("any", "hi")
        with pytest.raises(RpcResponseError, match="disposed"):
            await stack.client.load_session("any", CWD)
        assert stack.agents.list() == []


async def test_an_agent_created_through_the_bridge_is_unregistered_when_only_the_bridge_fiber_is_disposed(
    tmp_path: Path,
) -> None:
    """an agent created through the bridge is unregistered when ONLY the bridge fiber is disposed"""
    async with bridge_stack(tmp_path) as stack:
        first = await stack.session()
        second = await stack.client.new_session(CWD)
        assert {agent.id for agent in stack.agents.list()} == {first, second}
        await stack.acp_fiber.dispose()
        assert stack.acp_fiber.state is FiberState.DISPOSED
        assert stack.agents.list() == []
        # only the bridge went away: the rest of the stack still serves
        assert stack.harness.loop_fiber is not None
        assert stack.harness.loop_fiber.state is FiberState.ACTIVE
        other = stack.harness.agent("outside")
        assert stack.agents.get("outside") is other


async def test_no_agent_is_created_by_a_session_new_after_the_bridge_has_closed_closed_guard(
    tmp_path: Path,
) -> None:
    """no agent is created by a session/new after the bridge has closed (closed guard)"""
    async with bridge_stack(tmp_path) as stack:
        await stack.client.initialize()
        bridge = stack.bridge
        # a session/new already past its first checks when the teardown starts
        pending = asyncio.ensure_future(bridge.new_session({"cwd": CWD, "mcpServers": []}))
        await asyncio.sleep(0)
        await bridge.quiesce()
        await asyncio.wait({pending})
        error = pending.exception()
        assert isinstance(error, RequestError)
        assert str(error) == f"Internal error: {DISPOSED_MESSAGE}"
        assert stack.agents.list() == []
        # and over the wire, after the close
        with pytest.raises(RpcResponseError, match=DISPOSED_MESSAGE):
            await stack.client.new_session(CWD)
        assert stack.agents.list() == []


async def test_a_client_disconnect_mid_prompt_lets_the_prompt_finish_and_answers_it(tmp_path: Path) -> None:
    """(issue) end of input lets a prompt in flight finish: it is answered, then the session is torn down"""
    async with bridge_stack(tmp_path, [text_response("done")]) as stack:
        session_id = await stack.session()
        agent = stack.agent(session_id)
        prompt = stack.client.prompt_future(session_id, "go")
        await stack.close_client_transport()
        assert result_of(await prompt) == {"stopReason": "end_turn"}
        assert stack.bridge.closed
        assert stack.bridge.session_ids == []
        assert agent.status == "idle"
        ends = [e.data.reason for e in agent.session.events if type(e) is TurnEndEvent]
        assert ends == [CompletedReason()]


async def test_a_client_disconnect_mid_prompt_tears_the_session_down_to_quiescence_on_disposal(
    tmp_path: Path,
) -> None:
    """a client disconnect mid-prompt waits for the prompt; disposal then tears the session down"""
    async with bridge_stack(tmp_path, [HANG]) as stack:
        session_id = await stack.session()
        agent = stack.agent(session_id)
        prompt = stack.client.prompt_future(session_id, "go")
        await stack.client.wait_for(saw_chunk())
        stack.client.close()
        for _ in range(20):
            await asyncio.sleep(0)
        assert not stack.bridge.closed  # the prompt in flight is still being served
        assert not prompt.done()
        await stack.acp_fiber.dispose()
        await stack.bridge.wait_closed()
        assert stack.bridge.closed
        assert stack.bridge.session_ids == []
        assert agent.status == "disposed"
        ends = [e.data.reason for e in agent.session.events if type(e) is TurnEndEvent]
        assert ends == [DisposedReason()]
        # the answer still reached the client before the server closed its side
        assert result_of(await prompt) == {"stopReason": "cancelled"}


async def test_a_client_disconnect_racing_fiber_dispose_both_reach_quiescence_shared_teardown(tmp_path: Path) -> None:
    """a client disconnect racing fiber dispose both reach quiescence (shared teardown)"""
    async with bridge_stack(tmp_path, [HANG]) as stack:
        session_id = await stack.session()
        agent = stack.agent(session_id)
        prompt = stack.client.prompt_future(session_id, "go")
        await stack.client.wait_for(saw_chunk())
        bridge = stack.bridge
        stack.client.close()
        await asyncio.gather(stack.acp_fiber.dispose(), bridge.wait_closed(), bridge.quiesce())
        assert bridge.closed
        assert agent.status == "disposed"
        assert len([e for e in agent.session.events if type(e) is TurnEndEvent]) == 1
        assert result_of(await prompt) == {"stopReason": "cancelled"}
        await bridge.quiesce()  # memoized: a late caller returns at once


async def test_after_dispose_session_update_listeners_are_gone_no_further_updates_emitted(tmp_path: Path) -> None:
    """after dispose, session/update listeners are gone (no further updates emitted)"""
    async with bridge_stack(tmp_path, [text_response("before"), text_response("after")]) as stack:
        events_before = stack.ctx.listener_count(SESSION_EVENT)
        status_before = stack.ctx.listener_count(AGENT_STATUS)
        session_id = await stack.session()
        await stack.client.prompt(session_id, "go")
        frames = len(stack.client.frames)
        await stack.acp_fiber.dispose()
        assert stack.ctx.listener_count(SESSION_EVENT) == events_before - 1
        assert stack.ctx.listener_count(AGENT_STATUS) == status_before - 1
        # a turn elsewhere streams nothing to the client any more
        outside = stack.harness.agent("outside")
        outside.send([text("hi")])
        await outside.when_idle()
        assert [e.type for e in outside.session.events][-1] == "turn/end"
        assert len(stack.client.frames) == frames
