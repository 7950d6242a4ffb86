"""SPEC §8.14: coverage edges (turn-boundary throws, tool JSON parse, error normalization)."""

from __future__ import annotations

from typing import Any

from dsh.core.agent import AGENT_REQUEST, AGENT_TURN_END, AGENT_TURN_START, AgentOptions
from dsh.core.errors import HarnessError, LlmError
from dsh.core.session import TurnStartEvent
from dsh.core.tools import ToolDefinition
from dsh.testing.harness import Harness
from dsh.testing.scripted import HANG, Fail, text_response, tool_call_response
from tests.agent_loop.helpers import Recorder, RefusingSession, of_type, text, turn_end_reasons, types, until


async def test_a_throwing_agent_turn_start_listener_surfaces_via_agent_error_and_the_loop_survives() -> None:
    """a throwing agent/turn-start listener surfaces via agent/error and the loop survives"""
    async with Harness([text_response("second")]) as h:
        agent = h.agent()
        rec = Recorder(h.ctx, agent)
        calls: list[int] = []

        def boom(_a: Any, turn: int) -> None:
            calls.append(turn)
            if turn == 1:
                raise RuntimeError("turn-start boom")

        h.ctx.on(AGENT_TURN_START, boom)
        agent.send(text("one"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        assert [str(e[2]) for e in rec.errors] == ["turn-start boom"]
        agent.send(text("two"))
        await until(lambda: len(of_type(agent.session, "turn/end")) == 2)
        await agent.when_idle()
        assert len(h.model.requests) == 1
        assert turn_end_reasons(agent.session)[1] == {"kind": "completed"}


async def test_a_throwing_agent_turn_end_listener_surfaces_via_agent_error_and_the_loop_survives() -> None:
    """a throwing agent/turn-end listener surfaces via agent/error and the loop survives"""
    async with Harness([text_response("a"), text_response("b")]) as h:
        agent = h.agent()
        rec = Recorder(h.ctx, agent)

        def boom(_a: Any, turn: int, _reason: Any) -> None:
            if turn == 1:
                raise RuntimeError("turn-end boom")

        h.ctx.on(AGENT_TURN_END, boom)
        agent.send(text("one"))
        await until(lambda: bool(rec.errors) and agent.status == "idle")
        agent.send(text("two"))
        await until(lambda: len(of_type(agent.session, "turn/end")) == 2)
        await agent.when_idle()
        assert [str(e[2]) for e in rec.errors] == ["turn-end boom"]
        assert turn_end_reasons(agent.session) == [{"kind": "completed"}, {"kind": "completed"}]


async def test_a_pre_push_turn_start_failure_is_rethrown_to_the_run_loop_backstop() -> None:
    """a pre-push turn/start failure (the append refused) is rethrown to the runLoop backstop"""
    async with Harness([text_response("later")]) as h:
        agent = h.loop.start("main", AgentOptions(model="mock"), RefusingSession("s", TurnStartEvent))
        rec = Recorder(h.ctx, agent)
        agent.send(text("bad"))
        await until(lambda: bool(rec.errors))
        await agent.when_idle()
        _turn, step, error = rec.errors[0]
        assert step == 0
        assert "TurnStartEvent refused" in str(error)
        assert "turn/start" not in types(agent.session)
        agent.send(text("good"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        assert turn_end_reasons(agent.session) == [{"kind": "completed"}]


async def _run_tool_call(arguments: str) -> tuple[Any, list[Any]]:
    seen: list[Any] = []

    async def run(args: Any, _exec: Any) -> list[Any]:
        seen.append(args)
        return text("ok")

    chunks = tool_call_response("c1", "raw", arguments)
    async with Harness([chunks, text_response("done")]) as h:
        h.tools.register(ToolDefinition(name="raw", description="d", parameters={"type": "object"}, execute=run))
        agent = h.agent()
        agent.send(text("go"))
        await until(lambda: len(of_type(agent.session, "turn/end")) == 1)
        await agent.when_idle()
        return agent.session, seen


async def test_passes_through_non_json_arguments_string_without_crashing() -> None:
    """passes through non-JSON arguments string without crashing"""
    session, seen = await _run_tool_call("not json")
    assert of_type(session, "tool/call")[0]["arguments"] == "not json"
    assert seen == ["not json"]
    assert len(of_type(session, "tool/result")) == 1


async def test_uses_empty_object_when_tool_call_arguments_are_empty_string() -> None:
    """uses empty object when tool-call arguments are empty string"""
    _session, seen = await _run_tool_call("")
    assert seen == [{}]


class NakedError(Exception):
    """An exception with no message at all (Python's nearest to a thrown bare value)."""


async def test_normalizes_non_error_throws_from_turn_start_listeners_via_to_error() -> None:
    """normalizes non-Error throws from turn-start listeners via toError"""
    async with Harness([]) as h:
        agent = h.agent()

        def boom(_a: Any, _turn: int) -> None:
            raise HarnessError("naked string error", "UNKNOWN")

        h.ctx.on(AGENT_TURN_START, boom)
        agent.send(text("go"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        error = of_type(agent.session, "error")[0]
        assert error["message"] == "naked string error"
        assert error["code"] == "UNKNOWN"


async def test_normalizes_non_error_throws_from_agent_request_waterfall() -> None:
    """normalizes non-Error throws from agent/request waterfall via inline toError in runStep catch"""
    async with Harness([]) as h:
        agent = h.agent()

        def boom(*_args: Any) -> Any:
            raise NakedError()

        h.ctx.on(AGENT_REQUEST, boom)
        agent.send(text("go"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        error = of_type(agent.session, "error")[0]
        assert error["message"] == "NakedError"
        assert "code" not in error
        assert turn_end_reasons(agent.session)[0]["kind"] == "error"


async def test_error_data_includes_code_when_a_coded_error_is_thrown_from_a_plugin() -> None:
    """errorData includes code when a coded error (LlmError) is thrown from a plugin"""
    async with Harness([Fail(LlmError("slow down", "RATE_LIMIT", 429))]) as h:
        agent = h.agent()
        agent.send(text("go"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        assert of_type(agent.session, "error")[0]["code"] == "RATE_LIMIT"


async def test_handles_dispose_during_model_streaming_producing_reason_disposed() -> None:
    """handles dispose during model streaming producing reason "disposed\""""
    async with Harness([HANG]) as h:
        agent = h.agent()
        agent.send(text("go"))
        await until(lambda: "assistant/chunk" in types(agent.session))
        await agent.stop()
        assert turn_end_reasons(agent.session) == [{"kind": "disposed"}]
        assert "error" not in types(agent.session)


async def test_forwards_a_tool_harness_error_onto_the_tool_result_session_event() -> None:
    """forwards a tool HarnessError onto the tool/result session event"""

    async def run(_args: Any, _exec: Any) -> list[Any]:
        raise HarnessError("kaboom", "BOOM")

    async with Harness([tool_call_response("c1", "bad", {}), text_response("done")]) as h:
        h.tools.register(ToolDefinition(name="bad", description="d", parameters={"type": "object"}, execute=run))
        agent = h.agent()
        agent.send(text("go"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        result = of_type(agent.session, "tool/result")[0]
        assert result["error"] == {"name": "HarnessError", "code": "BOOM"}
        assert result["isError"] is True
