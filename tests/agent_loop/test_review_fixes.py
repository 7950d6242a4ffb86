"""SPEC §8.17: review fixes (step-result rewrites, abort in tools, steering, containment, finalizers)."""

from __future__ import annotations

import asyncio
from typing import Any

from dsh.core.agent import (
    AGENT_ERROR,
    AGENT_STATUS,
    AGENT_STEP_END,
    AGENT_STEP_RESULT,
    AGENT_STEP_START,
    AGENT_TURN_CONTINUATION,
    AGENT_TURN_END,
    AGENT_TURN_START,
    QueuedInfo,
)
from dsh.core.errors import LlmError
from dsh.core.llm import AgentSource, Message, TextBlock, ToolCallBlock, UserSource, to_json
from dsh.core.session import SESSION_EVENT, SESSION_FLUSH
from dsh.core.tools import TOOLS_EXECUTE, ToolDefinition, ToolExecutionResult
from dsh.testing.harness import Harness
from dsh.testing.scripted import HANG, error_finish, text_response, tool_call_response
from tests.agent_loop.helpers import (
    Recorder,
    assistant_texts,
    of_type,
    request_texts,
    text,
    turn_end_reasons,
    types,
    until,
)


def raiser(message: str) -> Any:
    def listener(*_args: Any) -> None:
        raise RuntimeError(message)

    return listener


def tool(name: str, run: Any) -> ToolDefinition:
    return ToolDefinition(name=name, description=name, parameters={"type": "object"}, execute=run)


async def finish_turns(agent: Any, count: int = 1) -> None:
    await until(lambda: len(of_type(agent.session, "turn/end")) >= count and agent.status != "running")
    await agent.when_idle()


# --------------------------------------------------------------- step-result rewrites
async def test_a_step_result_rewrite_is_what_the_log_derived_history_and_tool_dispatch_all_see() -> None:
    """a step-result rewrite is what the log, derived history, and tool dispatch all see"""
    ran: list[str] = []

    async def run(_args: Any, exec_: Any) -> list[Any]:
        ran.append(exec_.call_id)
        return text("tool ran")

    async with Harness([text_response("original"), text_response("final")]) as h:
        h.tools.register(tool("inj", run))
        agent = h.agent()

        def rewrite(_a: Any, _t: int, step: int, message: Any, next_: Any) -> Any:
            if step != 1:
                return next_()

            async def replaced() -> Any:
                return Message(
                    role="assistant",
                    content=(
                        TextBlock(text="rewritten"),
                        ToolCallBlock(id="c-injected", name="inj", arguments="{}"),
                    ),
                )

            return replaced()

        h.ctx.on(AGENT_STEP_RESULT, rewrite)
        agent.send(text("go"))
        await finish_turns(agent)
        assert ran == ["c-injected"]
        assert of_type(agent.session, "tool/call")[0]["callId"] == "c-injected"
        assert "original" not in str(of_type(agent.session, "assistant/message"))
        assert assistant_texts(agent.session)[0] == "rewritten"
        assert "original" not in request_texts(h.model.requests[1])


# ---------------------------------------------------------------- abort during tools
async def test_abort_inside_a_tool_prevents_both_remaining_tools_and_the_next_model_step() -> None:
    """abort() inside a tool prevents both remaining tools and the next model step"""
    calls: list[str] = []
    chunks = tool_call_response("c1", "first", {})
    two = [
        {"type": "block-start", "index": 0, "blockType": "tool-call"},
        {
            "type": "block-end",
            "index": 0,
            "block": {"type": "tool-call", "id": "c1", "name": "first", "arguments": "{}"},
        },
        {"type": "block-start", "index": 1, "blockType": "tool-call"},
        {
            "type": "block-end",
            "index": 1,
            "block": {"type": "tool-call", "id": "c2", "name": "second", "arguments": "{}"},
        },
        {"type": "finish", "reason": {"kind": "tool-calls"}},
    ]
    del chunks

    async def first(_args: Any, exec_: Any) -> list[Any]:
        calls.append("first")
        exec_.agent.abort("stop now")
        return text("first done")

    async def second(_args: Any, _exec: Any) -> list[Any]:
        calls.append("second")
        return text("second done")

    async with Harness([two, text_response("never")]) as h:
        h.tools.register(tool("first", first))
        h.tools.register(tool("second", second))
        agent = h.agent()
        agent.send(text("go"))
        await finish_turns(agent)
        assert calls == ["first"]
        assert len(h.model.requests) == 1
        assert turn_end_reasons(agent.session) == [{"kind": "aborted", "reason": "stop now"}]
        results = of_type(agent.session, "tool/result")
        assert [r["callId"] for r in results] == ["c1"]


async def test_cancel_interrupts_a_tool_that_ignores_the_signal_and_still_logs_its_result() -> None:
    started = asyncio.Event()

    async def stuck(_args: Any, _exec: Any) -> list[Any]:
        started.set()
        await asyncio.Event().wait()
        return text("never")

    async with Harness([tool_call_response("c1", "stuck", {})]) as h:
        h.tools.register(tool("stuck", stuck))
        agent = h.agent()
        agent.send(text("go"))
        await started.wait()
        agent.cancel()
        await finish_turns(agent)
        result = of_type(agent.session, "tool/result")[0]
        assert result["isError"] is True
        assert result["error"] == {"name": "AbortError", "code": "ABORTED"}
        assert turn_end_reasons(agent.session) == [{"kind": "aborted", "reason": "cancelled"}]


# ----------------------------------------------------------------- late steering
async def test_steer_from_an_agent_step_end_listener_reaches_the_next_request() -> None:
    """steer() from an agent/step-end listener reaches the next request (/goal pattern)"""
    async with Harness([text_response("a"), text_response("b")]) as h:
        agent = h.agent()
        done: list[bool] = []

        def goal(a: Any, _turn: int, step: int) -> None:
            if step == 1 and not done:
                done.append(True)
                a.steer(text("keep going"))

        h.ctx.on(AGENT_STEP_END, goal)
        agent.send(text("go"))
        await finish_turns(agent)
        assert len(h.model.requests) == 2
        assert "keep going" in request_texts(h.model.requests[1])


async def test_steer_from_an_agent_turn_continuation_listener_overrides_a_stop_decision() -> None:
    """steer() from an agent/turn-continuation listener overrides a stop decision"""
    async with Harness([text_response("a"), text_response("b")]) as h:
        agent = h.agent()

        def cont(a: Any, _turn: int, _default: bool, next_: Any) -> Any:
            if len(h.model.requests) == 1:
                a.steer(text("one more"))

            async def no() -> bool:
                return False

            return no()

        h.ctx.on(AGENT_TURN_CONTINUATION, cont)
        agent.send(text("go"))
        await finish_turns(agent)
        assert len(h.model.requests) == 2
        assert "one more" in request_texts(h.model.requests[1])


async def test_steer_from_an_agent_turn_end_listener_becomes_a_queued_message_for_the_next_turn() -> None:
    """steer() from an agent/turn-end listener becomes a queued message for the next turn"""
    async with Harness([text_response("a"), text_response("b")]) as h:
        agent = h.agent()
        rec = Recorder(h.ctx, agent)

        def late(a: Any, turn: int, _reason: Any) -> None:
            if turn == 1:
                a.steer(text("after the turn"))

        h.ctx.on(AGENT_TURN_END, late)
        agent.send(text("go"))
        await finish_turns(agent, 2)
        assert [d["turn"] for d in of_type(agent.session, "turn/start")] == [1, 2]
        assert rec.statuses == ["running", "idle"]
        assert of_type(agent.session, "user/message")[1]["content"] == to_json(text("after the turn"))


async def test_steering_queued_during_an_aborted_step_is_re_delivered_not_silently_consumed() -> None:
    """steering queued during an aborted step is re-delivered, not silently consumed"""
    async with Harness([HANG, text_response("b")]) as h:
        agent = h.agent()
        agent.send(text("go"))
        await until(lambda: "assistant/chunk" in types(agent.session))
        agent.steer(text("do not lose me"))
        agent.abort()
        await finish_turns(agent, 2)
        assert "do not lose me" in request_texts(h.model.requests[1])


# ------------------------------------------------------------------ containment
async def test_a_throwing_agent_turn_continuation_listener_ends_the_turn_with_an_error_loop_survives() -> None:
    """a throwing agent/turn-continuation listener ends the turn with an error, loop survives"""
    async with Harness([text_response("a"), text_response("b")]) as h:
        agent = h.agent()
        armed = [True]

        def boom(_a: Any, _t: int, _d: bool, next_: Any) -> Any:
            if armed.pop() if armed else False:
                raise RuntimeError("continuation boom")
            return next_()

        h.ctx.on(AGENT_TURN_CONTINUATION, boom)
        agent.send(text("one"))
        await finish_turns(agent)
        assert turn_end_reasons(agent.session)[0] == {"kind": "error", "message": "continuation boom"}
        agent.send(text("two"))
        await finish_turns(agent, 2)
        assert turn_end_reasons(agent.session)[1] == {"kind": "completed"}


async def test_a_rejecting_session_flush_listener_is_reported_but_does_not_kill_the_agent() -> None:
    """a rejecting session/flush listener is reported but does not kill the agent"""
    async with Harness([text_response("a"), text_response("b")]) as h:
        agent = h.agent()
        rec = Recorder(h.ctx, agent)

        async def full(_s: Any) -> None:
            raise OSError("disk full")

        h.ctx.on(SESSION_FLUSH, full)
        agent.send(text("one"))
        await until(lambda: bool(rec.errors) and agent.status == "idle")
        assert str(rec.errors[0][2]) == "disk full"
        assert agent.session.events[-1].type == "turn/end"
        agent.send(text("two"))
        await finish_turns(agent, 2)


# ------------------------------------------------------------ disposed status
async def test_disposing_the_fiber_emits_agent_status_disposed_and_ends_the_turn_with_reason_disposed() -> None:
    """disposing the fiber emits agent/status(disposed) and ends the turn with reason disposed"""
    async with Harness([HANG]) as h:
        agent = h.agent()
        rec = Recorder(h.ctx, agent)
        agent.send(text("go"))
        await until(lambda: "assistant/chunk" in types(agent.session))
        await agent.stop()
        assert rec.statuses == ["running", "disposed"]
        assert turn_end_reasons(agent.session) == [{"kind": "disposed"}]


async def test_a_throwing_agent_status_listener_cannot_break_disposal_or_leak_the_registry_entry() -> None:
    """a throwing agent/status listener cannot break disposal or leak the registry entry"""

    async with Harness([], loop_config={"agents": [{"id": "cfg", "model": "mock"}]}) as h:
        fiber = h.loop_fiber
        assert fiber is not None

        def boom(_a: Any, _status: str) -> None:
            raise RuntimeError("status boom")

        h.ctx.on(AGENT_STATUS, boom)
        agent = h.agents.get("cfg")
        assert agent is not None
        await fiber.dispose()
        assert agent.status == "disposed"
        assert h.agents.get("cfg") is None


# --------------------------------------------------------------- misc fixes
async def test_duplicate_adapter_registration_is_rejected() -> None:
    """duplicate adapter registration is rejected"""
    import pytest

    async with Harness([]) as h:
        with pytest.raises(LlmError, match="already registered"):
            h.llm.register_adapter(["mock"], h.model)


async def test_an_agent_without_a_model_fails_the_step_with_a_clear_error() -> None:
    """an agent without a model fails the step with a clear error (not NO_ADAPTER for "default")"""
    async with Harness([]) as h:
        agent = h.agent(model=None)
        agent.send(text("go"))
        await finish_turns(agent)
        message = of_type(agent.session, "error")[0]["message"]
        assert "has no model" in message
        assert "agent/request" in message


async def test_the_agent_request_waterfall_can_supply_the_model_for_a_model_less_agent() -> None:
    """the agent/request waterfall can supply the model for a model-less agent"""
    from dsh.core.agent import AGENT_REQUEST

    async with Harness([text_response("ok")]) as h:
        agent = h.agent(model=None)

        def supply(_a: Any, _t: int, _s: int, request: Any, next_: Any) -> Any:
            request.model = "mock"
            return next_()

        h.ctx.on(AGENT_REQUEST, supply)
        agent.send(text("go"))
        await finish_turns(agent)
        assert turn_end_reasons(agent.session) == [{"kind": "completed"}]


async def test_agent_queued_carries_the_resolved_source_agent_steering_carries_its_source() -> None:
    """agent/queued carries the resolved source; agent/steering carries its source"""
    from dsh.core.agent import AGENT_QUEUED, AGENT_STEERING

    async with Harness([HANG, text_response("b")]) as h:
        agent = h.agent()
        queued: list[Any] = []
        steering: list[Any] = []
        h.ctx.on(AGENT_QUEUED, lambda _a, _c, info: queued.append(info))
        h.ctx.on(AGENT_STEERING, lambda _a, _t, _c, source: steering.append(source))
        agent.send(text("go"))
        await until(lambda: "assistant/chunk" in types(agent.session))
        agent.steer(text("s"), source=AgentSource(agent_id="boss"))
        agent.abort()
        await finish_turns(agent, 2)
        assert queued[0] == QueuedInfo(source=UserSource(), steering=False)
        assert queued[1] == QueuedInfo(source=AgentSource(agent_id="boss"), steering=True)
        assert steering == []  # the aborted step re-queued it as a fresh message instead


async def test_a_forked_agent_continues_turn_numbers_after_the_seed_log() -> None:
    """a forked agent continues turn numbers after the seed log"""
    async with Harness([text_response("a"), text_response("b")]) as h:
        agent = h.agent()
        agent.send(text("one"))
        await finish_turns(agent)
        seeded = h.sessions.create("fork-1", seed=list(agent.session.events))
        fork = h.loop.start("fork", agent.options, seeded)
        fork.send(text("two"))
        await finish_turns(fork, 2)
        assert [d["turn"] for d in of_type(fork.session, "turn/start")] == [1, 2]


# -------------------------------------------------------------- finish errors
async def test_translates_finish_kind_error_into_a_turn_error_with_a_logged_error_event() -> None:
    """translates finish {kind:error} into a turn error with a logged error event"""
    async with Harness([error_finish("provider 401", "AUTH")]) as h:
        agent = h.agent()
        agent.send(text("go"))
        await finish_turns(agent)
        assert turn_end_reasons(agent.session) == [{"kind": "error", "message": "provider 401", "code": "AUTH"}]
        assert "assistant/message" not in types(agent.session)
        assert len(of_type(agent.session, "error")) == 1


async def test_translates_finish_kind_aborted_into_a_turn_error_coded_aborted() -> None:
    """translates finish {kind:aborted} into a turn error coded ABORTED"""
    async with Harness([[{"type": "finish", "reason": {"kind": "aborted"}}]]) as h:
        agent = h.agent()
        agent.send(text("go"))
        await finish_turns(agent)
        assert turn_end_reasons(agent.session) == [
            {"kind": "error", "message": "model stream aborted", "code": "ABORTED"}
        ]


async def test_handles_a_finish_error_without_a_code_code_key_omitted() -> None:
    """handles a finish error without a code (code key omitted)"""
    async with Harness([error_finish("plain failure")]) as h:
        agent = h.agent()
        agent.send(text("go"))
        await finish_turns(agent)
        assert turn_end_reasons(agent.session) == [{"kind": "error", "message": "plain failure"}]


async def test_a_step_start_listener_sees_the_step_start_event_already_in_session_events() -> None:
    """a step-start listener sees the step/start event already in session.events"""
    async with Harness([text_response("ok")]) as h:
        agent = h.agent()
        seen: list[str] = []
        h.ctx.on(AGENT_STEP_START, lambda a, _t, _s: seen.append(a.session.events[-1].type))
        agent.send(text("go"))
        await finish_turns(agent)
        assert seen == ["step/start"]


# ------------------------------------------------------- P1-5 finalizer balance
def balance(session: Any) -> tuple[int, int, int, int]:
    log = types(session)
    return log.count("turn/start"), log.count("turn/end"), log.count("step/start"), log.count("step/end")


async def test_a_throwing_agent_turn_start_listener_still_closes_the_turn_with_exactly_one_error_and_one_turn_end() -> (
    None
):
    """a throwing agent/turn-start listener still closes the turn with exactly one error and one turn/end, no step"""
    async with Harness([], invariants_plugin=True) as h:
        agent = h.agent()
        rec = Recorder(h.ctx, agent)
        h.ctx.on(AGENT_TURN_START, raiser("ts boom"))
        agent.send(text("go"))
        await finish_turns(agent)
        assert balance(agent.session) == (1, 1, 0, 0)
        assert len(of_type(agent.session, "error")) == 1
        assert len(rec.errors) == 1


async def test_a_throwing_agent_step_start_listener_closes_the_open_step_then_the_turn() -> None:
    """a throwing agent/step-start listener closes the open step then the turn (step/end before turn/end)"""
    async with Harness([]) as h:
        agent = h.agent()
        h.ctx.on(AGENT_STEP_START, raiser("ss boom"))
        agent.send(text("go"))
        await finish_turns(agent)
        assert types(agent.session) == [
            "turn/start",
            "user/message",
            "step/start",
            "step/end",
            "error",
            "turn/end",
        ]


async def test_a_throwing_agent_error_listener_during_a_step_error_path_still_balances_the_turn() -> None:
    """a throwing agent/error listener during a step-error path still balances the turn, loop survives"""
    async with Harness([error_finish("bad"), text_response("ok")]) as h:
        agent = h.agent()
        h.ctx.on(AGENT_ERROR, raiser("error listener boom"))
        agent.send(text("one"))
        await finish_turns(agent)
        assert balance(agent.session) == (1, 1, 1, 1)
        agent.send(text("two"))
        await finish_turns(agent, 2)
        assert turn_end_reasons(agent.session)[1] == {"kind": "completed"}


async def test_disposal_during_a_running_turn_ends_the_turn_with_reason_disposed_balanced() -> None:
    """disposal during a running turn ends the turn with reason disposed (balanced)"""
    async with Harness([HANG]) as h:
        agent = h.agent()
        agent.send(text("go"))
        await until(lambda: "assistant/chunk" in types(agent.session))
        await agent.stop()
        assert balance(agent.session) == (1, 1, 1, 1)
        assert "error" not in types(agent.session)


async def test_preserves_reason_disposed_when_the_turn_end_emit_throws_during_disposal() -> None:
    """preserves reason disposed when the turn-end emit throws during disposal (outer-catch disposed branch)"""
    async with Harness([HANG]) as h:
        agent = h.agent()
        rec = Recorder(h.ctx, agent)
        h.ctx.on(AGENT_TURN_END, raiser("te boom"))
        agent.send(text("go"))
        await until(lambda: "assistant/chunk" in types(agent.session))
        await agent.stop()
        assert turn_end_reasons(agent.session) == [{"kind": "disposed"}]
        assert "error" not in types(agent.session)
        assert rec.errors == []


async def test_a_throwing_session_event_listener_on_the_turn_start_append_still_balances_the_turn() -> None:
    """a throwing session/event listener on the turn/start append still balances the turn"""
    async with Harness([text_response("ok")]) as h:
        agent = h.agent()
        armed = [True]

        def boom(_s: Any, event: Any) -> None:
            if event.type == "turn/start" and armed:
                armed.clear()
                raise RuntimeError("append boom")

        h.ctx.on(SESSION_EVENT, boom)
        agent.send(text("go"))
        await finish_turns(agent)
        assert balance(agent.session)[:2] == (1, 1)
        assert turn_end_reasons(agent.session)[0]["kind"] == "error"


async def test_a_throwing_turn_end_listener_on_a_successful_turn_leaves_no_event_after_turn_end() -> None:
    """a throwing turn-end listener on a SUCCESSFUL turn leaves no event after turn/end (loadable log)"""
    async with Harness([text_response("ok")]) as h:
        agent = h.agent()
        rec = Recorder(h.ctx, agent)
        h.ctx.on(AGENT_TURN_END, raiser("boom turn-end"))
        agent.send(text("go"))
        await until(lambda: bool(rec.errors) and agent.status == "idle")
        assert agent.session.events[-1].type == "turn/end"
        assert "error" not in types(agent.session)
        assert str(rec.errors[0][2]) == "boom turn-end"


async def test_a_throwing_agent_step_end_listener_during_a_successful_step_ends_the_turn_as_error() -> None:
    """a throwing agent/step-end listener during a successful step ends the turn as error, not completed"""
    async with Harness([text_response("ok")]) as h:
        agent = h.agent()
        h.ctx.on(AGENT_STEP_END, raiser("se boom"))
        agent.send(text("go"))
        await finish_turns(agent)
        assert turn_end_reasons(agent.session) == [{"kind": "error", "message": "se boom"}]


async def test_a_step_error_followed_by_a_throwing_turn_end_listener_logs_the_error_exactly_once() -> None:
    """a step error followed by a throwing turn-end listener logs the error exactly once (no double-report)"""
    async with Harness([error_finish("step failed")]) as h:
        agent = h.agent()
        rec = Recorder(h.ctx, agent)
        h.ctx.on(AGENT_TURN_END, raiser("te boom"))
        agent.send(text("go"))
        await until(lambda: agent.status == "idle" and bool(of_type(agent.session, "turn/end")))
        assert len(of_type(agent.session, "error")) == 1
        assert len(rec.errors) == 1
        assert agent.session.events[-1].type == "turn/end"


async def test_a_throwing_session_event_listener_on_the_error_event_still_closes_the_turn() -> None:
    """a throwing session/event listener on the error event still closes the turn (finalizer containment)"""
    async with Harness([error_finish("bad")]) as h:
        agent = h.agent()

        def boom(_s: Any, event: Any) -> None:
            if event.type == "error":
                raise RuntimeError("error append boom")

        h.ctx.on(SESSION_EVENT, boom)
        agent.send(text("go"))
        await finish_turns(agent)
        assert balance(agent.session) == (1, 1, 1, 1)


async def test_a_throwing_session_event_listener_on_step_end_during_finalization_still_appends_turn_end() -> None:
    """a throwing session/event listener on step/end during finalization still appends turn/end"""
    async with Harness([error_finish("bad")]) as h:
        agent = h.agent()

        def boom(_s: Any, event: Any) -> None:
            if event.type == "step/end":
                raise RuntimeError("step-end append boom")

        h.ctx.on(SESSION_EVENT, boom)
        agent.send(text("go"))
        await finish_turns(agent)
        assert types(agent.session)[-1] == "turn/end"
        assert balance(agent.session) == (1, 1, 1, 1)


async def test_a_throwing_session_event_listener_on_turn_end_is_contained() -> None:
    """a throwing session/event listener on turn/end is contained (turn still balanced, loop survives)"""
    async with Harness([text_response("a"), text_response("b")]) as h:
        agent = h.agent()

        def boom(_s: Any, event: Any) -> None:
            if event.type == "turn/end":
                raise RuntimeError("turn-end append boom")

        h.ctx.on(SESSION_EVENT, boom)
        agent.send(text("one"))
        await finish_turns(agent)
        agent.send(text("two"))
        await finish_turns(agent, 2)
        assert balance(agent.session) == (2, 2, 2, 2)


async def test_a_tools_execute_listener_returning_a_mismatched_call_id_cannot_orphan_the_pairing() -> None:
    """a tools/execute listener returning a mismatched callId cannot orphan the call↔result pairing"""
    async with Harness([tool_call_response("c1", "x", {}), text_response("ok")]) as h:
        agent = h.agent()

        def liar(_exec: Any, _next: Any) -> Any:
            async def result() -> ToolExecutionResult:
                return ToolExecutionResult(call_id="WRONG", content=text("fake"), is_error=False)

            return result()

        h.ctx.on(TOOLS_EXECUTE, liar)
        agent.send(text("go"))
        await finish_turns(agent)
        assert of_type(agent.session, "tool/result")[0]["callId"] == "c1"


async def test_narrows_event_data_from_event_type() -> None:
    """narrows event.data from event.type

    Every logged event is an instance of its type's class, so ``type(event) is
    ToolCallEvent`` (or ``match``) narrows ``event.data`` to its payload class; this
    checks that every event the loop logs carries exactly its documented payload class.
    """
    from dsh.core import session as vocabulary

    payloads = {
        "turn/start": vocabulary.TurnStartData,
        "turn/end": vocabulary.TurnEndData,
        "step/start": vocabulary.StepData,
        "step/end": vocabulary.StepData,
        "user/message": vocabulary.MessageData,
        "assistant/chunk": vocabulary.AssistantChunkData,
        "assistant/message": vocabulary.AssistantMessageData,
        "tool/call": vocabulary.ToolCallData,
        "tool/result": vocabulary.ToolResultData,
        "usage": vocabulary.UsageData,
    }
    async with Harness([tool_call_response("c1", "noop", {}), text_response("ok")]) as h:
        h.tools.register(tool("noop", lambda _a, _e: _done()))
        agent = h.agent()
        agent.send(text("go"))
        await finish_turns(agent)
        seen = set()
        for event in agent.session.events:
            kind = event.type
            assert vocabulary.event_class(kind) is type(event), kind
            if kind in payloads:
                seen.add(kind)
                assert type(event.data) is payloads[kind], kind
        assert seen == set(payloads)


async def _done() -> list[Any]:
    return text("done")
