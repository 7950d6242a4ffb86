"""SPEC §8.10: ReactLoopAgent."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from dsh.agent_loop import ReactLoopAgent
from dsh.core.agent import AGENT_STATUS, AgentOptions
from dsh.core.errors import HarnessError
from dsh.core.llm import PluginSource, UserSource
from dsh.core.session import SESSION_EVENT, SESSION_FLUSH, InjectionTrigger, TurnStartData, TurnStartEvent
from dsh.testing.harness import Harness
from dsh.testing.scripted import HANG, text_response
from tests.agent_loop.helpers import Recorder, RefusingSession, of_type, text, turn_end_reasons, types, until


@pytest.mark.parametrize("method", ["send", "steer", "inject"])
async def test_input_methods_throw_after_disposal(method: str) -> None:
    """send() throws after disposal / steer() throws after disposal / inject() throws after disposal"""
    async with Harness([]) as h:
        agent = h.agent()
        assert agent.is_disposed() is False
        await agent.stop()
        assert agent.is_disposed() is True
        with pytest.raises(Exception, match="disposed"):
            getattr(agent, method)(text("x"))


async def test_inject_decides_enclosure_from_the_log_open_turn_not_agent_status() -> None:
    """inject() decides enclosure from the LOG (open turn), not agent status"""
    async with Harness([]) as h:
        agent = h.agent()
        session = agent.session
        session.append("turn/start", {"turn": 1, "trigger": {"kind": "message", "source": {"kind": "user"}}})
        agent.inject(text("inside"))
        assert types(session) == ["turn/start", "context/message"]
        session.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
        agent.inject(text("outside"))
        assert types(session)[-3:] == ["turn/start", "context/message", "turn/end"]
        assert session.events[-3].data == TurnStartData(turn=2, trigger=InjectionTrigger(source=UserSource()))


async def test_idle_inject_contains_a_failing_flush(caplog: pytest.LogCaptureFixture) -> None:
    """idle inject() contains a failing flush (logs, does not throw into the caller)"""
    async with Harness([]) as h:
        agent = h.agent()

        async def failing(_session: Any) -> None:
            raise RuntimeError("disk gone")

        h.ctx.on(SESSION_FLUSH, failing)
        with caplog.at_level(logging.WARNING):
            agent.inject(text("note"))
            await until(lambda: "flush after idle injection failed" in caplog.text)
        await agent.stop()


async def test_idle_inject_closes_its_one_shot_turn_and_still_checkpoints_even_if_the_append_throws() -> None:
    """idle inject() closes its one-shot turn AND still checkpoints even if the append throws"""
    async with Harness([]) as h:
        agent = h.agent()
        flushes: list[Any] = []
        h.ctx.on(SESSION_FLUSH, lambda s: flushes.append(s))

        def boom(_s: Any, event: Any) -> None:
            if event.type == "context/message":
                raise RuntimeError("listener boom")

        h.ctx.on(SESSION_EVENT, boom)
        with pytest.raises(RuntimeError, match="listener boom"):
            agent.inject(text("note"))
        await until(lambda: len(flushes) == 1)
        assert types(agent.session) == ["turn/start", "context/message", "turn/end"]


async def test_idle_inject_still_checkpoints_when_a_listener_throws_on_the_synthetic_turn_end() -> None:
    """idle inject() still checkpoints when a listener throws on the synthetic turn/end"""
    async with Harness([]) as h:
        agent = h.agent()
        flushes: list[Any] = []
        h.ctx.on(SESSION_FLUSH, lambda s: flushes.append(s))

        def boom(_s: Any, event: Any) -> None:
            if event.type == "turn/end":
                raise RuntimeError("listener boom")

        h.ctx.on(SESSION_EVENT, boom)
        agent.inject(text("note"))
        await until(lambda: len(flushes) == 1)
        assert types(agent.session) == ["turn/start", "context/message", "turn/end"]


async def test_idle_inject_reports_a_failing_flush_via_agent_error_step_0_and_the_logger(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """idle inject() reports a failing flush via agent/error (step 0) AND the logger"""
    async with Harness([]) as h:
        agent = h.agent()
        rec = Recorder(h.ctx, agent)

        async def failing(_session: Any) -> None:
            raise OSError("disk gone")

        h.ctx.on(SESSION_FLUSH, failing)
        with caplog.at_level(logging.WARNING):
            agent.inject(text("note"))
            await until(lambda: bool(rec.errors))
        turn, step, error = rec.errors[0]
        assert (turn, step, str(error)) == (1, 0, "disk gone")
        assert "disk gone" in caplog.text


async def test_idle_inject_whose_turn_start_is_refused_opens_no_turn() -> None:
    """idle inject() whose turn/start is refused opens no turn (nothing to close, nothing to flush)"""
    async with Harness([]) as h:
        agent = ReactLoopAgent(h.ctx, "solo", AgentOptions(model="mock"), RefusingSession("s", TurnStartEvent))
        flushes: list[Any] = []
        h.ctx.on(SESSION_FLUSH, lambda s: flushes.append(s))
        with pytest.raises(HarnessError, match="refused"):
            agent.inject(text("x"))
        assert types(agent.session) == []
        await agent.stop()
        assert flushes == []


async def test_steer_when_idle_falls_through_to_send_and_starts_a_turn() -> None:
    """steer() when idle falls through to send() and starts a turn"""
    async with Harness([text_response("ok")]) as h:
        agent = h.agent()
        agent.steer(text("hi"))
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        assert "steering/message" not in types(agent.session)
        assert of_type(agent.session, "user/message")[0]["content"] == [{"type": "text", "text": "hi"}]


async def test_disposer_is_idempotent_double_stop() -> None:
    """disposer is idempotent (double-stop)"""
    async with Harness([]) as h:
        agent = h.agent()
        rec = Recorder(h.ctx, agent)
        await agent.stop()
        await agent.stop()
        assert rec.statuses == ["disposed"]


async def test_setting_the_same_status_does_not_emit_agent_status_again() -> None:
    """setting the same status does not emit agent/status again"""
    async with Harness([text_response("a"), text_response("b")]) as h:
        agent = h.agent()
        rec = Recorder(h.ctx, agent)
        agent.send(text("one"))
        await until(lambda: rec.statuses == ["running", "idle"])
        agent.state.set_status("idle")
        agent.send(text("two"))
        await until(lambda: rec.statuses == ["running", "idle", "running", "idle"])
        assert rec.statuses.count("idle") == 2


async def test_when_idle_resolves_immediately_when_the_agent_is_not_running() -> None:
    """whenIdle() resolves immediately when the agent is not running"""
    async with Harness([]) as h:
        agent = h.agent()
        await agent.when_idle()
        assert agent.status == "idle"


async def test_when_idle_waits_for_queued_work_that_has_not_flipped_status_yet() -> None:
    """whenIdle() waits for queued work that has not flipped status yet"""
    async with Harness([HANG]) as h:
        agent = h.agent()
        agent.send(text("go"))
        waiter = asyncio.ensure_future(agent.when_idle())
        await until(lambda: "assistant/chunk" in types(agent.session))
        assert not waiter.done()
        agent.abort()
        await waiter
        assert turn_end_reasons(agent.session)[0]["kind"] == "aborted"


async def test_when_idle_awaits_the_running_to_idle_transition_ignoring_other_subjects() -> None:
    """whenIdle() awaits the running→idle transition, ignoring other subjects/running events"""
    async with Harness([HANG, text_response("other")]) as h:
        agent = h.agent()
        other = h.agent("other")
        agent.send(text("go"))
        await until(lambda: agent.status == "running")
        waiter = asyncio.ensure_future(agent.when_idle())
        other.send(text("x"))
        await other.when_idle()
        await until(lambda: other.status == "idle")
        assert not waiter.done()
        agent.abort()
        await waiter


async def test_when_idle_subscribed_while_running_resolves_via_done_when_the_agent_is_then_disposed() -> None:
    """whenIdle() subscribed while running resolves via done when the agent is then disposed"""
    async with Harness([HANG]) as h:
        agent = h.agent()
        agent.send(text("go"))
        await until(lambda: "assistant/chunk" in types(agent.session))
        waiter = asyncio.ensure_future(agent.when_idle())
        await asyncio.sleep(0)
        stopping = agent.stop()
        await waiter
        await stopping
        assert turn_end_reasons(agent.session) == [{"kind": "disposed"}]


async def test_when_idle_subscribed_while_running_survives_a_fiber_dispose() -> None:
    """whenIdle() subscribed while running survives a FIBER dispose (no hung promise)"""
    from dsh.core.agent import AGENTS

    async with Harness([HANG], loop_config={"agents": [{"id": "cfg", "model": "mock"}]}) as h:
        fiber = h.loop_fiber
        assert fiber is not None
        agent = h.ctx[AGENTS].get("cfg")
        assert agent is not None
        agent.send(text("go"))
        await until(lambda: "assistant/chunk" in types(agent.session))
        waiter = asyncio.ensure_future(agent.when_idle())
        await fiber.dispose()
        await waiter
        assert agent.status == "disposed"


async def test_when_idle_on_a_disposed_agent_awaits_the_loop_exit_not_just_the_status_flip() -> None:
    """whenIdle() on a disposed agent awaits the loop exit (done), not just the status flip"""
    async with Harness([HANG]) as h:
        agent = h.agent()
        agent.send(text("go"))
        await until(lambda: "assistant/chunk" in types(agent.session))
        stopping = agent.stop()
        assert agent.status == "disposed"
        await agent.when_idle()
        assert agent.session.events[-1].type == "turn/end"
        await stopping


async def test_contains_a_throwing_agent_status_listener_on_the_running_transition(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """contains a throwing agent/status listener on the running transition"""
    async with Harness([text_response("ok")]) as h:
        agent = h.agent()

        def boom(_a: Any, status: str) -> None:
            if status == "running":
                raise RuntimeError("status boom")

        h.ctx.on(AGENT_STATUS, boom)
        with caplog.at_level(logging.WARNING):
            agent.send(text("hi"))
            await until(lambda: bool(of_type(agent.session, "turn/end")))
            await agent.when_idle()
        assert turn_end_reasons(agent.session) == [{"kind": "completed"}]
        assert "agent/status listener threw on running" in caplog.text


async def test_contains_a_throwing_agent_status_listener_on_the_idle_transition(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """contains a throwing agent/status listener on the idle transition"""
    async with Harness([text_response("ok")]) as h:
        agent = h.agent()

        def boom(_a: Any, status: str) -> None:
            if status == "idle":
                raise RuntimeError("status boom")

        h.ctx.on(AGENT_STATUS, boom)
        with caplog.at_level(logging.WARNING):
            agent.send(text("hi"))
            await until(lambda: agent.status == "idle" and bool(of_type(agent.session, "turn/end")))
        assert "agent/status listener threw on idle" in caplog.text


async def test_abort_resolves_reason_to_aborted_when_no_reason_provided() -> None:
    """abort() resolves reason to "aborted" when no reason provided"""
    async with Harness([HANG]) as h:
        agent = h.agent()
        agent.abort()  # nothing in flight: a no-op
        agent.send(text("go"))
        await until(lambda: "assistant/chunk" in types(agent.session))
        agent.abort()
        await agent.when_idle()
        assert turn_end_reasons(agent.session) == [{"kind": "aborted", "reason": "aborted"}]


async def test_a_listener_editing_the_default_source_cannot_change_later_messages() -> None:
    """(extra) The default ``{kind: user}`` source is an immutable value: a listener cannot change it."""
    from dsh.core.agent import AGENT_QUEUED

    async with Harness([text_response("a"), text_response("b")]) as h:
        agent = h.agent()
        refused: list[str] = []

        def vandal(_a: Any, _content: Any, info: Any) -> None:
            with pytest.raises(AttributeError):
                info.source.kind = "plugin"
            with pytest.raises(AttributeError):
                info.source = PluginSource(plugin="vandal")
            refused.append("yes")

        effect = h.ctx.on(AGENT_QUEUED, vandal)
        agent.send(text("one"))
        effect()
        await until(lambda: bool(of_type(agent.session, "turn/end")))
        await agent.when_idle()
        agent.send(text("two"))
        await until(lambda: len(of_type(agent.session, "turn/end")) == 2)
        await agent.when_idle()
        sources = [data["source"] for data in of_type(agent.session, "user/message")]
        assert sources == [{"kind": "user"}, {"kind": "user"}]
        assert refused == ["yes"]
