"""SPEC §8.12: Agent.cancel() in every window."""

from __future__ import annotations

import asyncio
from typing import Any

from dsh.core.agent import AGENT_STATUS, AGENT_STEP_START, AGENT_TURN_CONTINUATION, AGENT_TURN_START
from dsh.core.llm import Message, TextBlock
from dsh.core.session.derive import INTERRUPTED_NOTE
from dsh.testing.harness import Harness
from dsh.testing.scripted import HANG, text_response, tool_call_response
from tests.agent_loop.helpers import Recorder, of_type, text, turn_end_reasons, types, until


async def test_cancel_on_an_idle_agent_with_nothing_queued_is_a_no_op_the_next_prompt_runs() -> None:
    """cancel() on an idle agent with nothing queued is a no-op; the next prompt runs (F2 leak guard)"""
    async with Harness([text_response("ok")]) as h:
        agent = h.agent()
        agent.cancel()
        assert agent.is_cancel_requested() is False
        agent.send(text("hi"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        assert turn_end_reasons(agent.session) == [{"kind": "completed"}]


async def test_pre_step_cancel_drops_the_about_to_start_turn_no_turn_is_opened() -> None:
    """pre-step cancel drops the about-to-start turn (no turn is opened)"""
    async with Harness([]) as h:
        agent = h.agent()
        rec = Recorder(h.ctx, agent)
        agent.send(text("hi"))
        agent.cancel()
        await agent.when_idle()
        for _ in range(5):
            await asyncio.sleep(0)
        assert "user/message" not in types(agent.session)
        assert "turn/start" not in types(agent.session)
        assert agent.status == "idle"
        assert rec.statuses == []


async def test_a_when_idle_waiter_registered_before_a_pre_step_cancel_resolves() -> None:
    """a whenIdle() waiter registered BEFORE a pre-step cancel resolves (F1 hang guard)"""
    async with Harness([]) as h:
        agent = h.agent()
        agent.send(text("hi"))
        waiter = asyncio.ensure_future(agent.when_idle())
        agent.cancel()
        await waiter
        assert types(agent.session) == []


async def test_cancel_mid_step_aborts_the_in_flight_model_call_the_turn_ends_aborted() -> None:
    """cancel() mid-step aborts the in-flight model call; the turn ends aborted"""
    async with Harness([HANG]) as h:
        agent = h.agent()
        agent.send(text("go"))
        await until(lambda: "assistant/chunk" in types(agent.session))
        agent.cancel("mid-step")
        await agent.when_idle()
        assert turn_end_reasons(agent.session) == [{"kind": "aborted", "reason": "mid-step"}]


async def test_cancel_with_no_reason_defaults_to_cancelled_when_aborting_an_in_flight_step() -> None:
    """cancel() with no reason defaults to "cancelled" when aborting an in-flight step"""
    async with Harness([HANG]) as h:
        agent = h.agent()
        agent.send(text("go"))
        await until(lambda: "assistant/chunk" in types(agent.session))
        agent.cancel()
        await agent.when_idle()
        assert turn_end_reasons(agent.session) == [{"kind": "aborted", "reason": "cancelled"}]


async def test_a_prompt_sent_after_a_cancelled_turn_settles_runs_normally_marker_reset() -> None:
    """a prompt sent AFTER a cancelled turn settles runs normally (marker reset)"""
    async with Harness([HANG, text_response("fine")]) as h:
        agent = h.agent()
        agent.send(text("one"))
        await until(lambda: "assistant/chunk" in types(agent.session))
        agent.cancel()
        await agent.when_idle()
        agent.send(text("two"))
        await until(lambda: len(of_type(agent.session, "turn/end")) == 2)
        await agent.when_idle()
        assert turn_end_reasons(agent.session)[1] == {"kind": "completed"}


async def test_cancel_from_a_synchronous_agent_turn_start_listener_drops_the_step() -> None:
    """cancel from a synchronous agent/turn-start listener drops the step (step-start window)"""
    async with Harness([]) as h:
        agent = h.agent()
        h.ctx.on(AGENT_TURN_START, lambda a, _turn: a.cancel())
        agent.send(text("go"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        assert "assistant/chunk" not in types(agent.session)
        assert h.model.requests == []
        assert turn_end_reasons(agent.session) == [{"kind": "aborted", "reason": "cancelled"}]
        assert types(agent.session) == ["turn/start", "user/message", "step/start", "step/end", "turn/end"]


async def test_cancel_from_an_agent_step_start_listener_drops_the_step() -> None:
    async with Harness([]) as h:
        agent = h.agent()
        h.ctx.on(AGENT_STEP_START, lambda a, _turn, _step: a.cancel())
        agent.send(text("go"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        assert h.model.requests == []
        assert turn_end_reasons(agent.session) == [{"kind": "aborted", "reason": "cancelled"}]


async def test_cancel_during_the_continuation_window_ends_the_turn_aborted_and_runs_no_further_step() -> None:
    """cancel during the continuation window ends the turn aborted and runs no further step"""
    async with Harness([tool_call_response("c1", "nope", {}), text_response("never")]) as h:
        agent = h.agent()

        def cont(a: Any, _turn: int, _default: bool, next_: Any) -> Any:
            a.cancel()
            return next_()

        h.ctx.on(AGENT_TURN_CONTINUATION, cont)
        agent.send(text("go"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        assert len(of_type(agent.session, "step/start")) == 1
        assert turn_end_reasons(agent.session) == [{"kind": "aborted", "reason": "cancelled"}]


async def test_cancel_from_a_synchronous_agent_status_running_listener_drops_the_turn() -> None:
    """cancel from a synchronous agent/status(running) listener drops the turn (window 2)"""
    async with Harness([]) as h:
        agent = h.agent()
        statuses: list[str] = []

        def on_status(a: Any, status: str) -> None:
            statuses.append(status)
            if status == "running":
                a.cancel()

        h.ctx.on(AGENT_STATUS, on_status)
        agent.send(text("go"))
        await until(lambda: statuses == ["running", "idle"])
        assert "turn/start" not in types(agent.session)
        assert "assistant/chunk" not in types(agent.session)


async def test_cancel_clears_the_turns_steering_it_is_not_re_enqueued_as_a_fresh_turn() -> None:
    """cancel clears the turn's steering — it is not re-enqueued as a fresh turn"""
    async with Harness([HANG]) as h:
        agent = h.agent()
        agent.send(text("go"))
        await until(lambda: "assistant/chunk" in types(agent.session))
        agent.steer(text("secret steering"))
        agent.cancel()
        await agent.when_idle()
        for _ in range(5):
            await asyncio.sleep(0)
        assert len(of_type(agent.session, "turn/start")) == 1
        assert "secret steering" not in str(agent.session.events)


async def test_a_prompt_sent_in_the_cancelled_turns_flush_window_runs_and_when_idle_waits_for_it() -> None:
    """The marker is cleared once per loop iteration: a prompt queued while the cancelled turn
    flushes runs right after it, and a when_idle() taken then waits for that second turn."""
    from dsh.core.session import SESSION_FLUSH

    async with Harness([HANG, text_response("second")]) as h:
        agent = h.agent()
        waiters: list[Any] = []

        async def flush(_session: Any) -> None:
            if not waiters:
                agent.send(text("two"))
                waiters.append(asyncio.ensure_future(agent.when_idle()))

        h.ctx.on(SESSION_FLUSH, flush)
        agent.send(text("one"))
        await until(lambda: "assistant/chunk" in types(agent.session))
        agent.cancel()
        await until(lambda: bool(waiters))
        await waiters[0]
        assert turn_end_reasons(agent.session) == [{"kind": "aborted", "reason": "cancelled"}, {"kind": "completed"}]


async def test_an_aborted_stream_logs_the_partial_answer_and_the_next_turn_sees_it() -> None:
    """The text the user saw before the abort is the step's assistant/message; the next request carries it."""
    async with Harness([HANG, text_response("fine")]) as h:
        agent = h.agent()
        agent.send(text("one"))
        await until(lambda: "assistant/chunk" in types(agent.session))
        agent.cancel("interrupted")
        await agent.when_idle()
        kinds = types(agent.session)
        assert kinds[-3:] == ["assistant/message", "step/end", "turn/end"]
        (partial,) = of_type(agent.session, "assistant/message")
        assert partial == {"turn": 1, "step": 1, "content": [{"type": "text", "text": "partial"}]}
        agent.send(text("two"))
        await until(lambda: len(of_type(agent.session, "turn/end")) == 2)
        await agent.when_idle()
        history = h.model.requests[1].messages
        assert [message.role for message in history] == ["user", "assistant", "user"]
        assert history[1].content == (TextBlock(text="partial"),)


async def test_an_abort_before_any_text_logs_no_assistant_message_and_the_model_gets_a_note() -> None:
    """Aborted before the model said anything: nothing partial is logged; the next request notes the interruption."""
    async with Harness([text_response("fine")]) as h:
        agent = h.agent()
        remove = h.ctx.on(AGENT_STEP_START, lambda a, _turn, _step: a.cancel("interrupted"))
        agent.send(text("one"))
        await until(lambda: len(of_type(agent.session, "turn/end")) == 1)
        await agent.when_idle()
        remove()
        assert "assistant/message" not in types(agent.session)
        agent.send(text("two"))
        await until(lambda: len(of_type(agent.session, "turn/end")) == 2)
        await agent.when_idle()
        history = h.model.requests[0].messages
        assert history == [
            Message(role="user", content=text("one")),
            Message(role="assistant", content=(TextBlock(text=INTERRUPTED_NOTE),)),
            Message(role="user", content=text("two")),
        ]
