"""SPEC §8.11: the agent loop (describe `agent loop`)."""

from __future__ import annotations

from typing import Any

from dsh.core.agent import (
    AGENT_REQUEST,
    AGENT_STEP_RESULT,
    AGENT_STREAM_CHUNK,
    AGENT_TURN_CONTINUATION,
    AGENT_TURN_END,
)
from dsh.core.llm import PluginSource, ToolResultBlock, to_json, variant_tag
from dsh.core.session import SESSION_FLUSH, InjectionTrigger, MaxTokensReason
from dsh.core.system_prompt import PromptSection
from dsh.core.tools import define_tool
from dsh.testing.harness import Harness
from dsh.testing.scripted import HANG, max_tokens_response, text_response, tool_call_response
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


def echo_tool(name: str = "echo") -> Any:
    async def run(args: dict[str, Any], _exec: Any) -> list[Any]:
        return text(f"echo: {args['text']}")

    return define_tool(
        name=name,
        description="Echo text back.",
        parameters={"text": {"type": "string", "required": True}},
        execute=run,
    )


async def test_runs_a_simple_turn_queued_message_model_idle_with_ordered_events() -> None:
    """runs a simple turn: queued message → model → idle, with ordered events"""
    async with Harness([text_response("hello")]) as h:
        agent = h.agent()
        rec = Recorder(h.ctx, agent)
        agent.send(text("hi"))
        await until(lambda: "turn-end" in rec.names())
        await agent.when_idle()
        assert rec.names() == ["turn-start", "step-start", "step-end", "turn-end"]
        log = types(agent.session)
        assert log[:2] == ["turn/start", "user/message"]
        assert "assistant/message" in log
        assert "usage" in log
        assert log[-1] == "turn/end"
        assert [m.role for m in agent.session.derive_messages()] == ["user", "assistant"]
        assert rec.statuses == ["running", "idle"]


async def test_round_trips_tool_calls_model_requests_tool_executes_result_in_next_request() -> None:
    """round-trips tool calls: model requests tool → executes → result in next request"""
    async with Harness([tool_call_response("c1", "echo", {"text": "ping"}), text_response("done")]) as h:
        h.tools.register(echo_tool())
        agent = h.agent()
        agent.send(text("go"))
        await until(lambda: len(h.model.requests) == 2 and agent.status == "idle")
        await agent.when_idle()
        assert len(h.model.requests) == 2
        last = h.model.requests[1].messages[-1]
        assert last.content == (ToolResultBlock(tool_call_id="c1", content=text("echo: ping"), is_error=False),)


async def test_passes_assembled_system_prompt_and_tool_schemas_into_the_request() -> None:
    """passes assembled system prompt and tool schemas into the request"""
    async with Harness([text_response("ok")]) as h:
        h.system_prompt.section(PromptSection(name="persona", order=0, text="You are a test agent."))
        h.tools.register(echo_tool("noop"))
        agent = h.agent(system_prompt="Agent-specific suffix.")
        agent.send(text("hi"))
        await until(lambda: bool(h.model.requests))
        await agent.when_idle()
        request = h.model.requests[0]
        assert request.system == "You are a test agent.\n\nAgent-specific suffix."
        assert [tool.name for tool in request.tools or []] == ["noop"]


async def test_records_raw_chunks_for_replay_and_emits_agent_stream_chunk() -> None:
    """records raw chunks for replay and emits agent/stream-chunk"""
    async with Harness([text_response("abc")]) as h:
        agent = h.agent()
        seen: list[Any] = []
        h.ctx.on(AGENT_STREAM_CHUNK, lambda _a, _t, _s, chunk: seen.append(chunk))
        agent.send(text("hi"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        chunks = [data["chunk"] for data in of_type(agent.session, "assistant/chunk")]
        assert len(chunks) == 7
        assert len(seen) == 7
        assert "".join(c["text"] for c in chunks if c["type"] == "text-delta") == "abc"


async def test_injects_steering_between_steps_and_continues_the_turn() -> None:
    """injects steering between steps and continues the turn"""
    steered: list[bool] = []
    async with Harness([tool_call_response("c1", "echo", {"text": "x"}), text_response("second")]) as h:

        async def run(args: dict[str, Any], exec_: Any) -> list[Any]:
            if not steered:
                steered.append(True)
                exec_.agent.steer(text("also this"))
            return text("ok")

        h.tools.register(
            define_tool(
                name="echo",
                description="d",
                parameters={"text": {"type": "string", "required": True}},
                execute=run,
            )
        )
        agent = h.agent()
        agent.send(text("go"))
        await until(lambda: len(h.model.requests) == 2 and agent.status == "idle")
        log = types(agent.session)
        steering_at = log.index("steering/message")
        assert steering_at < [i for i, t in enumerate(log) if t == "step/start"][1]
        assert "also this" in request_texts(h.model.requests[1])


async def test_steering_while_idle_behaves_like_send_starts_a_turn() -> None:
    """steering while idle behaves like send (starts a turn)"""
    async with Harness([text_response("ok")]) as h:
        agent = h.agent()
        agent.steer(text("hello"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        assert of_type(agent.session, "user/message")[0]["content"] == to_json(text("hello"))


async def test_inject_while_idle_wraps_context_in_a_one_shot_turn_visible_to_the_next_request() -> None:
    """inject() while idle wraps context in a one-shot turn, visible to the next request"""
    async with Harness([text_response("ok")]) as h:
        agent = h.agent()
        agent.inject(text("background fact"), source=PluginSource(plugin="p"))
        assert types(agent.session) == ["turn/start", "context/message", "turn/end"]
        assert agent.session.events[0].data.trigger == InjectionTrigger(source=PluginSource(plugin="p"))
        assert h.model.requests == []
        agent.send(text("question"))
        await until(lambda: len(of_type(agent.session, "turn/end")) == 2)
        await agent.when_idle()
        joined = request_texts(h.model.requests[0])
        assert "background fact" in joined
        assert '<context source="plugin">' in joined


async def test_inject_while_running_appends_into_the_open_turn_no_extra_synthetic_turn() -> None:
    """inject() while running appends into the open turn (no extra synthetic turn)"""
    async with Harness([HANG]) as h:
        agent = h.agent()
        agent.send(text("go"))
        await until(lambda: bool(h.model.requests))
        agent.inject(text("note"), source={"kind": "plugin", "plugin": "p"})
        agent.abort()
        await agent.when_idle()
        assert len(of_type(agent.session, "turn/start")) == 1
        assert "context/message" in types(agent.session)


async def test_agent_turn_continuation_can_force_continue_and_force_stop() -> None:
    """agent/turn-continuation can force-continue (/loop pattern) and force-stop"""
    async with Harness([text_response("a"), text_response("b"), text_response("c")]) as h:
        agent = h.agent()

        def decide(_agent: Any, _turn: int, default: bool, next_: Any) -> Any:
            async def run() -> bool:
                return len(h.model.requests) < 3

            return run()

        h.ctx.on(AGENT_TURN_CONTINUATION, decide)
        agent.send(text("loop"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        assert len(h.model.requests) == 3
        assert len(of_type(agent.session, "step/start")) == 3


async def test_agent_turn_continuation_can_veto_continuation_despite_tool_calls() -> None:
    """agent/turn-continuation can veto continuation despite tool calls (budget-guard pattern)"""
    async with Harness([tool_call_response("c1", "echo", {"text": "x"})]) as h:
        h.tools.register(echo_tool())
        agent = h.agent()

        async def veto() -> bool:
            return False

        h.ctx.on(AGENT_TURN_CONTINUATION, lambda _a, _t, _d, _n: veto())
        agent.send(text("go"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        assert len(h.model.requests) == 1
        assert of_type(agent.session, "tool/result")[0]["content"] == to_json(text("echo: x"))


async def test_agent_request_waterfall_can_rewrite_the_request_model_switch_pattern() -> None:
    """agent/request waterfall can rewrite the request (model-switch pattern)"""
    async with Harness([text_response("ok")]) as h:
        agent = h.agent(model="other")

        def switch(_a: Any, _t: int, _s: int, request: Any, next_: Any) -> Any:
            request.model = "mock"
            return next_()

        h.ctx.on(AGENT_REQUEST, switch)
        agent.send(text("hi"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        assert h.model.requests[0].model == "mock"
        assert turn_end_reasons(agent.session) == [{"kind": "completed"}]


async def test_abort_mid_stream_ends_the_turn_with_reason_aborted() -> None:
    """abort() mid-stream ends the turn with reason aborted"""
    async with Harness([HANG]) as h:
        agent = h.agent()
        agent.send(text("go"))
        await until(lambda: "assistant/chunk" in types(agent.session))
        agent.abort("user interrupt")
        await agent.when_idle()
        assert turn_end_reasons(agent.session) == [{"kind": "aborted", "reason": "user interrupt"}]


async def test_surfaces_max_tokens_as_the_turn_end_reason_when_the_last_step_is_cut_off() -> None:
    """surfaces max-tokens as the turn-end reason when the last step is cut off"""
    async with Harness([max_tokens_response("cut")]) as h:
        agent = h.agent()
        reasons: list[Any] = []
        h.ctx.on(AGENT_TURN_END, lambda _a, _t, reason: reasons.append(reason))
        agent.send(text("go"))
        await until(lambda: bool(reasons))
        await agent.when_idle()
        assert reasons == [MaxTokensReason()]
        assert turn_end_reasons(agent.session) == [{"kind": "max-tokens"}]


async def test_a_max_tokens_step_earlier_in_a_turn_still_surfaces_as_max_tokens_after_a_later_completed_step() -> None:
    """a max-tokens step earlier in a turn still surfaces as max-tokens after a later completed step"""
    async with Harness([max_tokens_response("first half"), text_response("second half")]) as h:
        agent = h.agent()

        async def yes() -> bool:
            return len(h.model.requests) < 2

        h.ctx.on(AGENT_TURN_CONTINUATION, lambda _a, _t, _d, _n: yes())
        agent.send(text("go"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        assert turn_end_reasons(agent.session) == [{"kind": "max-tokens"}]
        second = h.model.requests[1].messages
        assert [m.role for m in second] == ["user", "assistant"]
        assert second[1].content == text("first half")


async def test_a_completed_step_after_no_max_tokens_keeps_the_turn_completed() -> None:
    """a completed step after no max-tokens keeps the turn completed (max-tokens does not leak across turns)"""
    async with Harness([max_tokens_response("cut"), text_response("fine")]) as h:
        agent = h.agent()
        agent.send(text("one"))
        await until(lambda: len(of_type(agent.session, "turn/end")) == 1)
        await agent.when_idle()
        agent.send(text("two"))
        await until(lambda: len(of_type(agent.session, "turn/end")) == 2)
        await agent.when_idle()
        assert turn_end_reasons(agent.session) == [{"kind": "max-tokens"}, {"kind": "completed"}]


async def test_does_not_dispatch_tool_calls_from_a_max_tokens_truncated_step() -> None:
    """does not dispatch tool calls from a max-tokens-truncated step"""
    chunks = tool_call_response("c1", "echo", {"text": "x"})
    chunks[-1] = {"type": "finish", "reason": {"kind": "max-tokens"}}
    executed: list[Any] = []
    async with Harness([chunks]) as h:

        async def run(args: Any, _e: Any) -> list[Any]:
            executed.append(args)
            return text("no")

        h.tools.register(define_tool(name="echo", description="d", parameters={}, execute=run))
        agent = h.agent()
        agent.send(text("go"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        assert executed == []
        assert "tool/call" not in types(agent.session)
        assert "assistant/message" not in types(agent.session)
        assert turn_end_reasons(agent.session) == [{"kind": "max-tokens"}]


async def test_keeps_safe_max_tokens_assistant_content_while_dropping_truncated_tool_calls() -> None:
    """keeps safe max-tokens assistant content while dropping truncated tool calls"""
    chunks = tool_call_response("c1", "echo", {"text": "x"}, text="safe text")
    chunks[-1] = {"type": "finish", "reason": {"kind": "max-tokens"}}
    async with Harness([chunks]) as h:
        agent = h.agent()
        seen: list[Any] = []

        def watch(_a: Any, _t: int, _s: int, message: Any, next_: Any) -> Any:
            seen.append([variant_tag(b) for b in message.content])
            return next_()

        h.ctx.on(AGENT_STEP_RESULT, watch)
        agent.send(text("go"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        assert seen == [["text"]]
        derived = agent.session.derive_messages()
        assert derived[-1].content == text("safe text")


async def test_stops_the_turn_when_agent_step_end_listener_failure_has_recorded_an_error() -> None:
    """stops the turn when agent/step-end listener failure has recorded an error"""
    from dsh.core.agent import AGENT_STEP_END

    async with Harness([tool_call_response("c1", "echo", {"text": "x"}), text_response("never")]) as h:
        h.tools.register(echo_tool())
        agent = h.agent()

        def boom(*_args: Any) -> None:
            raise RuntimeError("step-end boom")

        h.ctx.on(AGENT_STEP_END, boom)
        agent.send(text("go"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        assert len(h.model.requests) == 1
        assert turn_end_reasons(agent.session)[0]["kind"] == "error"


async def test_chains_queued_messages_into_consecutive_turns() -> None:
    """chains queued messages into consecutive turns"""
    async with Harness([HANG, text_response("two")]) as h:
        agent = h.agent()
        agent.send(text("one"))
        await until(lambda: bool(h.model.requests))
        agent.send(text("second"))
        agent.abort()
        await until(lambda: len(of_type(agent.session, "turn/end")) == 2)
        await agent.when_idle()
        assert [d["turn"] for d in of_type(agent.session, "turn/start")] == [1, 2]


async def test_awaits_session_flush_at_turn_end_persistence_checkpoint() -> None:
    """awaits session/flush at turn end (persistence checkpoint)"""
    async with Harness([text_response("ok")]) as h:
        agent = h.agent()
        statuses: list[str] = []

        async def flush(_session: Any) -> None:
            statuses.append(agent.status)

        h.ctx.on(SESSION_FLUSH, flush)
        agent.send(text("hi"))
        await until(lambda: bool(statuses) and agent.status == "idle")
        assert statuses == ["running"]


async def test_errors_from_the_model_surface_as_agent_error_and_end_the_turn() -> None:
    """errors from the model surface as agent/error and end the turn"""
    async with Harness([]) as h:
        agent = h.agent()
        rec = Recorder(h.ctx, agent)
        agent.send(text("hi"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        assert "script exhausted" in str(rec.errors[0][2])
        assert turn_end_reasons(agent.session)[0]["kind"] == "error"
        assert len(of_type(agent.session, "error")) == 1


async def test_disposing_the_loop_fiber_mid_turn_stops_the_loop_hmr_safety() -> None:
    """disposing the loop fiber mid-turn stops the loop (HMR safety)"""
    import pytest

    from dsh.core.agent import AGENTS

    async with Harness([HANG], loop_config={"agents": [{"id": "cfg", "model": "mock"}]}) as h:
        loop_fiber = h.loop_fiber
        assert loop_fiber is not None
        agent = h.ctx[AGENTS].get("cfg")
        assert agent is not None
        agent.send(text("go"))
        await until(lambda: bool(h.model.requests))
        await loop_fiber.dispose()
        assert agent.status == "disposed"
        assert h.ctx[AGENTS].get("cfg") is None
        with pytest.raises(Exception, match="disposed"):
            agent.send(text("again"))
        assert turn_end_reasons(agent.session) == [{"kind": "disposed"}]


async def test_creates_agents_from_config_on_startup() -> None:
    """creates agents from config on startup"""
    async with Harness([], loop_config={"agents": [{"id": "a1", "model": "mock", "systemPrompt": "x"}]}) as h:
        agent = h.agents.get("a1")
        assert agent is not None
        assert agent.options.model == "mock"
        assert agent.options.system_prompt == "x"
        assert agent.session.id.startswith("a1-session-")


async def test_replays_a_session_log_into_an_identical_derived_history() -> None:
    """replays a session log into an identical derived history"""
    async with Harness([text_response("answer")]) as h:
        agent = h.agent()
        agent.send(text("question"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        copy = h.sessions.create("replayed", seed=list(agent.session.events))
        assert copy.derive_messages() == agent.session.derive_messages()
        assert assistant_texts(copy) == ["answer"]
