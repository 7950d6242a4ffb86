"""SPEC §14.15 — ``packages/acp/tests/turns.spec.ts`` (describe ``acp bridge — turn outcomes``)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from dsh.core.agent import AGENT_QUEUED, AGENT_STATUS, Agent
from dsh.core.llm import ContentBlock, PluginSource, text
from dsh.core.session import (
    SESSION_EVENT,
    AbortedReason,
    CompletedReason,
    ErrorReason,
    InjectionTrigger,
    MaxStepsReason,
    MessageTrigger,
    Session,
    SessionEvent,
    TurnEndData,
    TurnEndEvent,
    TurnEndReason,
    TurnStartData,
    TurnStartEvent,
)
from dsh.core.tools import TOOLS, ToolCallPresentation, ToolDefinition, ToolExecution
from dsh.testing.scripted import HANG, error_finish, max_tokens_response, text_response, tool_call_response
from tests.acp.client import RpcResponseError, message_text, result_of
from tests.acp.events import shell_present_call, shell_present_result
from tests.acp.helpers import CWD, BridgeStack, bridge_stack, saw_chunk, wait_status

PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


def turn_starts(agent: Agent) -> list[TurnStartData]:
    return [e.data for e in agent.session.events if type(e) is TurnStartEvent]


def last_turn_end(agent: Agent) -> TurnEndReason:
    return [e.data.reason for e in agent.session.events if type(e) is TurnEndEvent][-1]


async def echo_execute(args: Any, execution: ToolExecution) -> list[ContentBlock]:
    return [text(f"ran {args.get('command')}\n")]


def register(stack: BridgeStack, definition: ToolDefinition) -> None:
    stack.ctx[TOOLS].register(definition)


async def test_maps_a_max_tokens_turn_to_stop_reason_max_tokens(tmp_path: Path) -> None:
    """maps a max-tokens turn to stopReason max_tokens"""
    async with bridge_stack(tmp_path, [max_tokens_response("cut off")]) as stack:
        session_id = await stack.session()
        assert await stack.client.prompt(session_id, "go") == {"stopReason": "max_tokens"}
        assert message_text(stack.updates) == "cut off"


async def test_maps_a_turn_cut_off_at_its_step_limit_to_max_turn_requests(tmp_path: Path) -> None:
    """a turn that reaches the loop's maxSteps answers stopReason max_turn_requests"""
    script = [tool_call_response(f"c{i}", "bash", {"command": "echo again"}) for i in range(2)]
    async with bridge_stack(tmp_path, script, loop_config={"agents": [], "maxSteps": 2}) as stack:
        register(
            stack, ToolDefinition(name="bash", description="stand-in", parameters=PARAMETERS, execute=echo_execute)
        )
        session_id = await stack.session()
        assert await stack.client.prompt(session_id, "loop") == {"stopReason": "max_turn_requests"}
        assert type(last_turn_end(stack.agent(session_id))) is MaxStepsReason


async def test_rejects_the_prompt_rpc_when_a_turn_fails_no_misleading_end_turn(tmp_path: Path) -> None:
    """rejects the prompt RPC when a turn fails (no misleading end_turn)"""
    async with bridge_stack(tmp_path, [error_finish("provider boom", "PROVIDER")]) as stack:
        session_id = await stack.session()
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.prompt(session_id, "go")
        assert caught.value.error == {"code": -32603, "message": "Internal error: turn failed: provider boom"}
        assert last_turn_end(stack.agent(session_id)) == ErrorReason(message="provider boom", code="PROVIDER")


async def test_streams_a_tool_call_as_tool_call_then_tool_call_update(tmp_path: Path) -> None:
    """streams a tool call as tool_call then tool_call_update"""
    script = [tool_call_response("c1", "bash", {"command": "echo hi"}), text_response("done")]
    async with bridge_stack(tmp_path, script) as stack:
        register(
            stack, ToolDefinition(name="bash", description="stand-in", parameters=PARAMETERS, execute=echo_execute)
        )
        session_id = await stack.session()
        assert await stack.client.prompt(session_id, "run it") == {"stopReason": "end_turn"}
        tool_updates = [u for u in stack.updates if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
        assert [u["sessionUpdate"] for u in tool_updates] == ["tool_call", "tool_call_update"]
        call, result = tool_updates
        assert (call["title"], call["kind"], call["status"], call["toolCallId"]) == (
            "bash",
            "execute",
            "in_progress",
            "c1",
        )
        assert call["rawInput"] == {"command": "echo hi"}
        assert (result["status"], result["toolCallId"]) == ("completed", "c1")
        assert result["content"] == [{"type": "content", "content": {"type": "text", "text": "ran echo hi\n"}}]
        assert message_text(stack.updates) == "done"


async def test_the_real_bash_tool_drives_the_tool_call_ui_end_to_end(tmp_path: Path) -> None:
    """the REAL bash tool drives the tool-call UI end-to-end: command title + description block + console output"""
    script = [tool_call_response("c1", "bash", {"command": "echo hi", "description": "Say hi"}), text_response("ok")]
    async with bridge_stack(tmp_path, script, bash=True) as stack:
        session_id = await stack.session(cwd=str(tmp_path))
        assert await stack.client.prompt(session_id, "run") == {"stopReason": "end_turn"}
        call, result = [u for u in stack.updates if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
        assert call == {
            "sessionUpdate": "tool_call",
            "toolCallId": "c1",
            "title": "echo hi",
            "kind": "execute",
            "status": "in_progress",
            "rawInput": {"command": "echo hi", "description": "Say hi"},
            "content": [{"type": "content", "content": {"type": "text", "text": "Say hi"}}],
        }
        assert result == {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": "```console\nhi\n```"}}],
        }


async def test_with_the_terminal_output_capability_on_a_real_bash_call_renders_as_a_terminal_card(
    tmp_path: Path,
) -> None:
    """with the terminal_output capability ON, a real bash call renders as a TERMINAL card (content + _meta + exit)"""
    script = [tool_call_response("c1", "bash", {"command": "echo hi", "description": "Say hi"}), text_response("ok")]
    async with bridge_stack(tmp_path, script, bash=True) as stack:
        session_id = await stack.session(cwd=str(tmp_path), terminal_output=True)
        assert await stack.client.prompt(session_id, "run") == {"stopReason": "end_turn"}
        call, result = [u for u in stack.updates if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
        assert call["content"] == [
            {"type": "content", "content": {"type": "text", "text": "Say hi"}},
            {"type": "terminal", "terminalId": "c1"},
        ]
        assert call["_meta"] == {"terminal_info": {"terminal_id": "c1", "cwd": str(tmp_path)}}
        assert "content" not in result
        assert result["_meta"]["terminal_output"] == {"terminal_id": "c1", "data": "hi\n"}
        assert result["_meta"]["terminal_exit"] == {"terminal_id": "c1", "exit_code": 0}


async def test_the_terminal_capability_is_snapshotted_per_session_a_later_initialize_cannot_desync_a_call_result(
    tmp_path: Path,
) -> None:
    """the terminal capability is snapshotted per-session: a later initialize cannot desync a call/result"""
    release = asyncio.Event()

    async def slow_shell(args: Any, execution: ToolExecution) -> list[ContentBlock]:
        await release.wait()
        return [text("hi\n")]

    script = [tool_call_response("c1", "shell", {"command": "echo hi", "description": "d"}), text_response("ok")]
    async with bridge_stack(tmp_path, script) as stack:
        register(
            stack,
            ToolDefinition(
                name="shell",
                description="d",
                parameters=PARAMETERS,
                execute=slow_shell,
                present_call=shell_present_call,
                present_result=shell_present_result,
            ),
        )
        session_id = await stack.session(terminal_output=True)
        prompt = stack.client.prompt_future(session_id, "run")
        await stack.client.wait_for(lambda c: any(u["sessionUpdate"] == "tool_call" for u in c.updates))
        await stack.client.initialize(terminal_output=False)  # the connection-level capability flips off
        release.set()
        assert result_of(await prompt) == {"stopReason": "end_turn"}
        call, result = [u for u in stack.updates if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
        assert call["_meta"]["terminal_info"]["terminal_id"] == "c1"
        assert result["_meta"]["terminal_exit"] == {"terminal_id": "c1", "exit_code": 0}
        # a session opened after the change does not get terminal cards
        later = await stack.client.new_session(CWD)
        assert later != session_id


async def test_a_throwing_tool_presenter_does_not_break_the_turn_the_bridge_falls_back_generically(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """a throwing tool presenter does not break the turn: the bridge falls back generically"""

    def present_call(args: Any) -> ToolCallPresentation:
        raise RuntimeError("presenter exploded")

    script = [tool_call_response("c1", "kaboom", {"x": 1}), text_response("fine")]
    async with bridge_stack(tmp_path, script) as stack:
        register(
            stack,
            ToolDefinition(
                name="kaboom", description="d", parameters=PARAMETERS, execute=echo_execute, present_call=present_call
            ),
        )
        session_id = await stack.session()
        with caplog.at_level(logging.WARNING):
            assert await stack.client.prompt(session_id, "go") == {"stopReason": "end_turn"}
        [call] = [u for u in stack.updates if u["sessionUpdate"] == "tool_call"]
        assert (call["title"], call["kind"], call["rawInput"]) == ("kaboom", "other", {"x": 1})
        assert 'acp: tool "kaboom" presentCall threw, using generic presentation' in caplog.text


async def test_a_failing_tool_yields_a_failed_tool_call_update(tmp_path: Path) -> None:
    """a failing tool yields a failed tool_call_update"""

    async def fail(args: Any, execution: ToolExecution) -> list[ContentBlock]:
        raise RuntimeError("tool broke")

    script = [tool_call_response("c1", "breaker", {}), text_response("sorry")]
    async with bridge_stack(tmp_path, script) as stack:
        register(stack, ToolDefinition(name="breaker", description="d", parameters=PARAMETERS, execute=fail))
        session_id = await stack.session()
        assert await stack.client.prompt(session_id, "go") == {"stopReason": "end_turn"}
        [update] = [u for u in stack.updates if u["sessionUpdate"] == "tool_call_update"]
        assert update["status"] == "failed"
        assert "tool broke" in update["content"][0]["content"]["text"]


def starve(stack: BridgeStack, *types: str) -> None:
    """A peer session/event listener, ahead of everyone, that throws on ``types``."""

    def peer(session: Session, event: SessionEvent) -> None:
        if event.type in types:
            raise RuntimeError(f"peer listener boom on {event.type}")

    stack.ctx.on(SESSION_EVENT, peer, prepend=True)


async def test_settles_via_the_log_fallback_when_a_prior_session_event_listener_throws_starvation(
    tmp_path: Path,
) -> None:
    """settles via the log fallback when a prior session/event listener throws (starvation)"""
    async with bridge_stack(tmp_path, [text_response("answer")]) as stack:
        session_id = await stack.session()
        starve(stack, "turn/end")
        assert await stack.client.prompt(session_id, "go") == {"stopReason": "end_turn"}
        assert last_turn_end(stack.agent(session_id)) == CompletedReason()


async def test_log_fallback_rejects_when_the_starved_turn_ended_in_error(tmp_path: Path) -> None:
    """log fallback REJECTS when the starved turn ended in error"""
    async with bridge_stack(tmp_path, [error_finish("starved boom")]) as stack:
        session_id = await stack.session()
        starve(stack, "turn/end")
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.prompt(session_id, "go")
        assert caught.value.error == {"code": -32603, "message": "Internal error: turn failed: starved boom"}


async def test_log_fallback_infers_the_owning_turn_when_turn_start_capture_is_starved(tmp_path: Path) -> None:
    """log fallback infers the owning turn when turn/START capture is starved"""
    async with bridge_stack(tmp_path, [text_response("never")]) as stack:
        session_id = await stack.session()
        starve(stack, "turn/start")
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.prompt(session_id, "go")
        assert caught.value.message.startswith("Internal error: turn failed: ")
        assert "peer listener boom on turn/start" in caught.value.message


async def test_log_fallback_skips_an_injection_turn_when_inferring_the_owning_turn(tmp_path: Path) -> None:
    """(extra) the inferred owning turn is the first MESSAGE-triggered turn after the watermark"""
    async with bridge_stack(tmp_path, [text_response("never")]) as stack:
        session_id = await stack.session()
        agent = stack.agent(session_id)

        def peer(session: Session, event: SessionEvent) -> None:
            if type(event) is TurnStartEvent and type(event.data.trigger) is MessageTrigger:
                raise RuntimeError("peer listener boom on the message turn")

        def inject_once(subject: Agent, content: Any, info: Any) -> None:
            if subject is agent and not turn_starts(agent):
                agent.inject([text("context")], source=PluginSource(plugin="test"))

        stack.ctx.on(SESSION_EVENT, peer, prepend=True)
        stack.ctx.on(AGENT_QUEUED, inject_once)
        with pytest.raises(RpcResponseError, match="turn failed: peer listener boom on the message turn"):
            await stack.client.prompt(session_id, "go")
        assert [type(start.trigger) for start in turn_starts(agent)] == [InjectionTrigger, MessageTrigger]


async def test_a_between_turn_injection_does_not_settle_the_prompt_early_message_trigger_correlation(
    tmp_path: Path,
) -> None:
    """a between-turn injection does not settle the prompt early (message-trigger correlation)"""
    async with bridge_stack(tmp_path, [text_response("real answer")]) as stack:
        session_id = await stack.session()
        agent = stack.agent(session_id)
        injected: list[bool] = []

        def inject_once(subject: Agent, content: Any, info: Any) -> None:
            if subject is agent and not injected:
                injected.append(True)
                agent.inject([text("context")], source=PluginSource(plugin="test"))

        stack.ctx.on(AGENT_QUEUED, inject_once)
        assert await stack.client.prompt(session_id, "go") == {"stopReason": "end_turn"}
        assert message_text(stack.updates) == "real answer"
        triggers = [type(start.trigger) for start in turn_starts(agent)]
        assert triggers == [InjectionTrigger, MessageTrigger]


async def test_rejects_a_second_prompt_while_one_is_in_flight(tmp_path: Path) -> None:
    """rejects a second prompt while one is in flight"""
    async with bridge_stack(tmp_path, [HANG]) as stack:
        session_id = await stack.session()
        first = stack.client.prompt_future(session_id, "one")
        await stack.client.wait_for(saw_chunk())
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.prompt(session_id, "two")
        assert caught.value.error == {
            "code": -32602,
            "message": "Invalid params: a prompt is already in flight for this session",
        }
        stack.client.cancel(session_id)
        assert result_of(await first) == {"stopReason": "cancelled"}


async def test_session_cancel_aborts_a_running_turn_and_settles_the_prompt_as_cancelled(tmp_path: Path) -> None:
    """session/cancel aborts a running turn and settles the prompt as cancelled"""
    async with bridge_stack(tmp_path, [HANG]) as stack:
        session_id = await stack.session()
        agent = stack.agent(session_id)
        prompt = stack.client.prompt_future(session_id, "go")
        await stack.client.wait_for(saw_chunk())
        assert agent.status == "running"
        stack.client.cancel(session_id)
        assert result_of(await prompt) == {"stopReason": "cancelled"}
        await agent.when_idle()
        assert last_turn_end(agent) == AbortedReason(reason="session/cancel")
        assert message_text(stack.updates) == "partial"


async def test_cancel_right_after_prompt_settles_cancelled_and_leaves_the_agent_idle_no_leaked_turn(
    tmp_path: Path,
) -> None:
    """cancel right after prompt settles cancelled and leaves the agent idle, no leaked turn"""
    async with bridge_stack(tmp_path, [text_response("should not run")]) as stack:
        session_id = await stack.session()
        agent = stack.agent(session_id)
        prompt = stack.client.prompt_future(session_id, "go")
        stack.client.cancel(session_id)
        assert result_of(await prompt) == {"stopReason": "cancelled"}
        await agent.when_idle()
        assert agent.status == "idle"
        assert len(turn_starts(agent)) <= 1
        assert stack.harness.model.remaining == 1


async def test_idle_session_cancel_then_session_prompt_runs_the_prompt_no_intervening_when_idle(
    tmp_path: Path,
) -> None:
    """idle session/cancel then session/prompt runs the prompt (no intervening whenIdle)"""
    async with bridge_stack(tmp_path, [text_response("answer")]) as stack:
        session_id = await stack.session()
        stack.client.cancel(session_id)
        assert await stack.client.prompt(session_id, "go") == {"stopReason": "end_turn"}
        assert message_text(stack.updates) == "answer"


async def test_mid_stream_cancel_then_an_immediate_next_prompt_runs_no_intervening_when_idle(tmp_path: Path) -> None:
    """mid-stream cancel then an IMMEDIATE next prompt runs (no intervening whenIdle)"""
    async with bridge_stack(tmp_path, [HANG, text_response("next")]) as stack:
        session_id = await stack.session()
        first = stack.client.prompt_future(session_id, "one")
        await stack.client.wait_for(saw_chunk())
        stack.client.cancel(session_id)
        second = stack.client.prompt_future(session_id, "two")
        assert result_of(await first) == {"stopReason": "cancelled"}
        assert result_of(await second) == {"stopReason": "end_turn"}
        assert message_text(stack.updates) == "partialnext"


async def test_a_cancelled_turn_s_late_turn_end_does_not_settle_the_next_prompt(tmp_path: Path) -> None:
    """a cancelled turn's late turn/end does not settle the NEXT prompt"""
    async with bridge_stack(tmp_path, [HANG, HANG]) as stack:
        session_id = await stack.session()
        agent = stack.agent(session_id)
        first = stack.client.prompt_future(session_id, "one")
        await stack.client.wait_for(saw_chunk())
        stack.client.cancel(session_id)
        second = stack.client.prompt_future(session_id, "two")
        assert result_of(await first) == {"stopReason": "cancelled"}
        await stack.client.wait_for(saw_chunk(2))  # turn 2 is streaming: turn 1's end was logged before it
        ends = [e.data for e in agent.session.events if type(e) is TurnEndEvent]
        assert ends == [TurnEndData(turn=1, reason=AbortedReason(reason="session/cancel"))]
        assert not second.done()
        stack.client.cancel(session_id)
        assert result_of(await second) == {"stopReason": "cancelled"}


async def test_a_prompt_whose_turn_never_starts_settles_cancelled_through_the_status_fallback(tmp_path: Path) -> None:
    """(extra) a prompt whose turn is dropped before it starts settles cancelled on the idle status"""
    async with bridge_stack(tmp_path, [text_response("never")]) as stack:
        session_id = await stack.session()
        agent = stack.agent(session_id)

        def cancel_on_running(subject: Agent, status: str) -> None:
            if subject is agent and status == "running":
                agent.cancel("dropped by policy")

        stack.ctx.on(AGENT_STATUS, cancel_on_running)
        assert await stack.client.prompt(session_id, "go") == {"stopReason": "cancelled"}
        assert turn_starts(agent) == []


async def test_a_prompt_whose_agent_is_disposed_mid_turn_settles_cancelled(tmp_path: Path) -> None:
    """(extra) the agent goes away mid-turn (its owner is disposed): the status fallback settles cancelled"""
    async with bridge_stack(tmp_path, [HANG]) as stack:
        session_id = await stack.session()
        prompt = stack.client.prompt_future(session_id, "go")
        await stack.client.wait_for(saw_chunk())
        owner = stack.bridge._sessions[session_id].owner
        await owner.dispose()
        assert result_of(await prompt) == {"stopReason": "cancelled"}
        assert stack.agents.get(session_id) is None


async def test_a_send_rejected_by_the_agent_frees_the_prompt_slot(tmp_path: Path) -> None:
    """(extra) agent.send raising (a throwing agent/queued listener) answers Internal error and frees the slot"""
    async with bridge_stack(tmp_path, [text_response("one"), text_response("two")]) as stack:
        session_id = await stack.session()
        agent = stack.agent(session_id)
        failures: list[bool] = []

        def refuse_once(subject: Agent, content: Any, info: Any) -> None:
            if not failures:
                failures.append(True)
                raise RuntimeError("queue listener boom")

        stack.ctx.on(AGENT_QUEUED, refuse_once)
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.prompt(session_id, "one")
        assert caught.value.error == {
            "code": -32603,
            "message": "Internal error",
            "data": {"details": "queue listener boom"},
        }
        await wait_status(stack.ctx, agent, "idle")
        await agent.when_idle()
        assert await stack.client.prompt(session_id, "two") == {"stopReason": "end_turn"}
