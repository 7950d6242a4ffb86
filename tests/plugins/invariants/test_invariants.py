"""The invariants plugin on a real kernel and a real session store (SPEC §13)."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

import dsh.plugins.invariants as invariants
from dsh.core.agent import AGENT_STATUS, Agent
from dsh.core.errors import HarnessError, InvariantError
from dsh.core.llm import TextBlock, to_json
from dsh.core.session import (
    SESSION_CREATED,
    SESSION_EVENT,
    SESSIONS,
    Session,
    SessionEvent,
    SessionStore,
    UntypedEvent,
    parse_session_event,
)
from dsh.kernel import ConfigError, Context, Fiber, FiberState
from tests.core.agent.helpers import FakeAgent

USER = {"kind": "user"}
USAGE = {"inputTokens": 1, "outputTokens": 1}


async def boot(config: dict[str, Any] | None = None) -> tuple[Context, SessionStore, Fiber]:
    root = Context()
    await root.plugin(SessionStore)
    fiber = await root.plugin(invariants, config)
    return root, root[SESSIONS], fiber


def text(value: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": value}]


def open_turn(session: Session, turn: int = 1) -> None:
    session.append("turn/start", {"turn": turn, "trigger": {"kind": "message", "source": USER}})


def open_step(session: Session, turn: int = 1, step: int = 1) -> None:
    session.append("step/start", {"turn": turn, "step": step})


def close_step(session: Session, turn: int = 1, step: int = 1) -> None:
    session.append("step/end", {"turn": turn, "step": step})


def close_turn(session: Session, turn: int = 1) -> None:
    session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


def tool_call(session: Session, call_id: str, turn: int = 1, step: int = 1) -> None:
    session.append("tool/call", {"turn": turn, "step": step, "callId": call_id, "name": "echo", "arguments": "{}"})


def tool_result(session: Session, call_id: str, turn: int = 1, step: int = 1, **extra: Any) -> None:
    data = {"turn": turn, "step": step, "callId": call_id, "content": text("ok"), "isError": False}
    session.append("tool/result", {**data, **extra})


def raw_event(kind: str, seq: int, data: Any) -> SessionEvent:
    """An event built outside any session (as a loader would), for emitting ``session/event`` directly."""
    return parse_session_event({"type": kind, "seq": seq, "time": 1, "data": data})


def seed_events(*events: tuple[str, dict[str, Any]]) -> list[SessionEvent]:
    return [raw_event(kind, seq, data) for seq, (kind, data) in enumerate(events)]


TURN_1 = ("turn/start", {"turn": 1, "trigger": {"kind": "message", "source": USER}})


# ------------------------------------------------------------------ describe session-log invariants


async def test_accepts_a_well_formed_turn_step_tool_sequence() -> None:
    """accepts a well-formed turn/step/tool sequence"""
    _, sessions, _ = await boot()
    session = sessions.create("s")

    open_turn(session)
    session.append("user/message", {"content": text("hi"), "source": USER})
    open_step(session)
    session.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "x"}})
    session.append("assistant/message", {"turn": 1, "step": 1, "content": text("x")})
    tool_call(session, "c1")
    tool_result(session, "c1")
    session.append("usage", {"turn": 1, "step": 1, "usage": USAGE})
    close_step(session)
    close_turn(session)

    assert [event.type for event in session.events] == [
        "turn/start",
        "user/message",
        "step/start",
        "assistant/chunk",
        "assistant/message",
        "tool/call",
        "tool/result",
        "usage",
        "step/end",
        "turn/end",
    ]


async def test_rejects_a_non_monotonic_seq_replay_spine() -> None:
    """rejects a non-monotonic seq (replay spine)"""
    root, sessions, _ = await boot()
    session = sessions.create("s")
    root.emit(SESSION_EVENT, session, raw_event("turn/start", 0, TURN_1[1]))

    with pytest.raises(InvariantError, match="seq must strictly increase: saw 0 after 0"):
        root.emit(SESSION_EVENT, session, raw_event("user/message", 0, {"content": [], "source": USER}))


async def test_rejects_a_turn_start_while_another_turn_is_open() -> None:
    """rejects a turn/start while another turn is open"""
    _, sessions, _ = await boot()
    session = sessions.create("s")
    open_turn(session)

    with pytest.raises(InvariantError, match="turn/start 2 while turn 1 is still open"):
        open_turn(session, 2)
    assert session.seq == 2  # the append pushed before the listener raised


async def test_rejects_a_turn_end_that_does_not_match_the_open_turn() -> None:
    """rejects a turn/end that does not match the open turn"""
    _, sessions, _ = await boot()
    session = sessions.create("s")
    open_turn(session)

    with pytest.raises(InvariantError, match="turn/end 2 does not match open turn 1"):
        close_turn(session, 2)

    other = sessions.create("t")
    with pytest.raises(InvariantError, match="turn/end 1 does not match open turn null"):
        close_turn(other, 1)


async def test_rejects_a_step_start_outside_its_declared_turn() -> None:
    """rejects a step/start outside its declared turn"""
    _, sessions, _ = await boot()
    session = sessions.create("s")
    open_turn(session)

    with pytest.raises(InvariantError, match="step/start in turn 2 but open turn is 1"):
        open_step(session, turn=2)

    idle = sessions.create("idle")
    with pytest.raises(InvariantError, match="step/start in turn 1 but open turn is null"):
        open_step(idle)


async def test_rejects_a_step_end_that_does_not_match_the_open_step() -> None:
    """rejects a step/end that does not match the open step"""
    _, sessions, _ = await boot()
    session = sessions.create("s")
    open_turn(session)
    open_step(session)

    with pytest.raises(InvariantError, match="step/end names turn 1/step 2 but open is turn 1/step 1"):
        close_step(session, step=2)


async def test_rejects_an_assistant_chunk_outside_an_open_step() -> None:
    """rejects an assistant/chunk outside an open step"""
    _, sessions, _ = await boot()
    session = sessions.create("s")
    open_turn(session)

    with pytest.raises(InvariantError, match="assistant/chunk names turn 1/step 1 but open is turn 1/step null"):
        session.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "usage", "usage": USAGE}})


async def test_rejects_a_message_event_appended_outside_any_open_turn_turn_enclosure() -> None:
    """rejects a message event appended outside any open turn (turn-enclosure)"""
    _, sessions, _ = await boot()
    session = sessions.create("s")

    with pytest.raises(
        InvariantError,
        match=r"user/message appended outside any open turn \(every event must be turn-enclosed\)",
    ):
        session.append("user/message", {"content": text("hi"), "source": USER})
    with pytest.raises(InvariantError, match="context/message appended outside any open turn"):
        session.append("context/message", {"content": text("ctx"), "source": {"kind": "plugin", "plugin": "p"}})


async def test_rejects_usage_error_and_plugin_added_events_appended_outside_any_open_turn() -> None:
    """rejects usage/error and plugin-added events appended outside any open turn"""
    _, sessions, _ = await boot()
    session = sessions.create("s")

    with pytest.raises(InvariantError, match="usage appended outside any open turn"):
        session.append("usage", {"turn": 1, "step": 1, "usage": USAGE})
    with pytest.raises(InvariantError, match="error appended outside any open turn"):
        session.append("error", {"turn": 1, "step": 1, "message": "boom"})
    with pytest.raises(InvariantError, match="compaction/marker appended outside any open turn"):
        session.append("compaction/marker", {"upTo": 3})


async def test_accepts_message_events_once_a_turn_is_open() -> None:
    """accepts message events once a turn is open"""
    _, sessions, _ = await boot()
    session = sessions.create("s")
    open_turn(session)

    session.append("user/message", {"content": text("hi"), "source": USER})
    session.append("context/message", {"content": text("ctx"), "source": {"kind": "plugin", "plugin": "p"}})
    session.append("steering/message", {"turn": 1, "content": text("steer"), "source": USER})
    session.append("compaction/marker", {"upTo": 1})
    session.append("error", {"turn": 1, "step": 0, "message": "contained"})

    assert session.seq == 6


async def test_rejects_a_tool_result_with_no_prior_tool_call() -> None:
    """rejects a tool/result with no prior tool/call"""
    _, sessions, _ = await boot()
    session = sessions.create("s")
    open_turn(session)
    open_step(session)

    with pytest.raises(InvariantError, match="tool/result for c9 with no prior tool/call in this step"):
        tool_result(session, "c9")


async def test_allows_a_synthetic_interrupted_tool_result_from_crash_repair_without_a_prior_tool_call() -> None:
    """allows a synthetic interrupted tool/result from crash repair without a prior tool/call event"""
    _, sessions, _ = await boot()
    session = sessions.create("s")
    open_turn(session)
    open_step(session)

    tool_result(session, "lost", isError=True, error={"name": "InterruptedError", "code": "interrupted"})
    close_step(session)
    session.append("turn/end", {"turn": 1, "reason": {"kind": "interrupted"}})

    assert to_json(session.events[-1])["data"]["reason"] == {"kind": "interrupted"}
    open_turn(session, 2)
    open_step(session, 2)
    with pytest.raises(InvariantError, match="tool/result for other with no prior tool/call"):
        tool_result(session, "other", 2, isError=True, error={"name": "Other", "code": "other"})
    with pytest.raises(InvariantError, match="tool/result for late with no prior tool/call"):
        tool_result(session, "late", 2, isError=False, error={"name": "InterruptedError", "code": "interrupted"})


async def test_allows_a_tool_call_with_no_matching_tool_result_thrown_waterfall_ends_the_step() -> None:
    """allows a tool/call with no matching tool/result (thrown waterfall ends the step)"""
    _, sessions, _ = await boot()
    session = sessions.create("s")
    open_turn(session)
    open_step(session)
    tool_call(session, "c1")

    close_step(session)
    session.append("error", {"turn": 1, "step": 1, "message": "waterfall threw"})
    close_turn(session)

    assert session.events[-1].type == "turn/end"


async def test_holds_seeded_sessions_to_the_contract_on_session_created() -> None:
    """holds seeded sessions to the contract on session/created"""
    _, sessions, _ = await boot()
    bad_seed = seed_events(TURN_1, ("turn/start", {"turn": 2, "trigger": {"kind": "continuation"}}))

    with pytest.raises(InvariantError, match="turn/start 2 while turn 1 is still open"):
        sessions.create("forked", seed=bad_seed)

    assert sessions.get("forked") is None
    good = sessions.create(
        "forked", seed=seed_events(TURN_1, ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}))
    )
    open_turn(good, 2)
    assert good.seq == 3


async def test_tracks_turns_per_session_independently() -> None:
    """tracks turns per session independently"""
    _, sessions, _ = await boot()
    first, second = sessions.create("a"), sessions.create("b")

    open_turn(first)
    open_turn(second)
    open_step(second)
    close_step(second)
    close_turn(second)
    open_step(first)

    with pytest.raises(InvariantError, match="turn/start 2 while turn 1 is still open"):
        open_turn(first, 2)
    open_turn(second, 2)


async def test_accepts_multiple_steps_in_a_turn_and_consecutive_turns() -> None:
    """accepts multiple steps in a turn and consecutive turns"""
    _, sessions, _ = await boot()
    session = sessions.create("s")

    for turn in (1, 2, 3):
        open_turn(session, turn)
        for step in (1, 2, 3):
            open_step(session, turn, step)
            tool_call(session, f"c{turn}{step}", turn, step)
            tool_result(session, f"c{turn}{step}", turn, step)
            close_step(session, turn, step)
        close_turn(session, turn)

    assert session.seq == 3 * (2 + 3 * 4)


async def test_rejects_a_skipped_turn_number() -> None:
    """rejects a skipped turn number"""
    _, sessions, _ = await boot()
    session = sessions.create("s")
    open_turn(session)
    close_turn(session)

    with pytest.raises(InvariantError, match="turn/start expected turn 2, got 3"):
        open_turn(session, 3)


async def test_rejects_a_skipped_step_number_within_a_turn() -> None:
    """rejects a skipped step number within a turn"""
    _, sessions, _ = await boot()
    session = sessions.create("s")
    open_turn(session)
    open_step(session)
    close_step(session)

    with pytest.raises(InvariantError, match="step/start expected step 2 in turn 1, got 3"):
        open_step(session, step=3)


async def test_rejects_a_turn_end_while_a_step_is_still_open() -> None:
    """rejects a turn/end while a step is still open"""
    _, sessions, _ = await boot()
    session = sessions.create("s")
    open_turn(session)
    open_step(session)

    with pytest.raises(InvariantError, match="turn/end 1 while step 1 is still open"):
        close_turn(session)


async def test_rejects_a_step_start_while_a_step_is_still_open() -> None:
    """rejects a step/start while a step is still open"""
    _, sessions, _ = await boot()
    session = sessions.create("s")
    open_turn(session)
    open_step(session)

    with pytest.raises(InvariantError, match="step/start 2 while step 1 is still open"):
        open_step(session, step=2)


async def test_rejects_a_tool_result_satisfying_a_call_from_a_previous_step() -> None:
    """rejects a tool/result satisfying a call from a previous step"""
    _, sessions, _ = await boot()
    session = sessions.create("s")
    open_turn(session)
    open_step(session)
    tool_call(session, "c1")
    close_step(session)
    open_step(session, step=2)

    with pytest.raises(InvariantError, match="tool/result for c1 with no prior tool/call in this step"):
        tool_result(session, "c1", step=2)


async def test_rejects_an_assistant_message_naming_the_wrong_step() -> None:
    """rejects an assistant/message naming the wrong step"""
    _, sessions, _ = await boot()
    session = sessions.create("s")
    open_turn(session)
    open_step(session)

    with pytest.raises(InvariantError, match="assistant/message names turn 1/step 2 but open is turn 1/step 1"):
        session.append("assistant/message", {"turn": 1, "step": 2, "content": text("x")})


async def test_a_second_result_for_the_same_call_is_rejected() -> None:
    """A call is answered once: its id leaves the pending set with the first result."""
    _, sessions, _ = await boot()
    session = sessions.create("s")
    open_turn(session)
    open_step(session)
    tool_call(session, "c1")
    tool_result(session, "c1")

    with pytest.raises(InvariantError, match="tool/result for c1 with no prior tool/call"):
        tool_result(session, "c1")


async def test_an_event_for_a_session_the_store_never_announced_starts_a_fresh_trace() -> None:
    """session/event for an unknown session is checked from an empty trace."""
    root, _, _ = await boot()
    loose = Session("loose")

    root.emit(SESSION_EVENT, loose, raw_event("turn/start", 0, TURN_1[1]))
    with pytest.raises(InvariantError, match="turn/start 1 while turn 1 is still open"):
        root.emit(SESSION_EVENT, loose, raw_event("turn/start", 1, TURN_1[1]))
    with pytest.raises(InvariantError, match="plugin/x appended outside"):
        root.emit(SESSION_EVENT, Session("bare"), UntypedEvent(type="plugin/x", seq=0, time=1, data=None))


# ------------------------------------------------------------------ describe HMR state rebuild


async def test_rebuilds_trace_state_for_a_session_that_exists_at_re_apply_time() -> None:
    """rebuilds trace state for a session that exists at (re-)apply time"""
    root = Context()
    await root.plugin(SessionStore)
    session = root[SESSIONS].create("early")
    open_turn(session)
    open_step(session)

    fiber = await root.plugin(invariants)

    close_step(session)  # accepted only because the trace knows turn 1/step 1 is open
    await fiber.dispose()
    open_step(session, step=2)  # unchecked while the plugin is away

    await root.plugin(invariants)

    with pytest.raises(InvariantError, match="step/start 3 while step 2 is still open"):
        open_step(session, step=3)


async def test_apply_fails_when_an_existing_session_breaks_the_contract() -> None:
    """A live log that already breaks the contract makes the plugin load fail."""
    root = Context()
    await root.plugin(SessionStore)
    root[SESSIONS].create("broken").append("usage", {"turn": 1, "step": 1, "usage": USAGE})

    with pytest.raises(InvariantError, match="usage appended outside any open turn"):
        await root.plugin(invariants)


# ------------------------------------------------------------------ describe immutable history


async def test_logged_events_are_immutable_without_any_freezing_step() -> None:
    """Logged history cannot be changed: events and their payloads are frozen values."""
    _, sessions, _ = await boot()
    session = sessions.create("s")
    event = session.append("turn/start", {"turn": 1, "trigger": {"kind": "message", "source": USER}})
    session.append("user/message", {"content": text("hi"), "source": USER})

    assert event is session.events[0]
    with pytest.raises(AttributeError):
        event.data.turn = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        event.data.trigger.source = None  # type: ignore[union-attr]
    content = session.events[1].data.content  # type: ignore[union-attr]
    assert content == (TextBlock(text="hi"),)
    with pytest.raises(AttributeError):
        content[0].text = "changed"  # type: ignore[union-attr]
    derived = session.derive_messages()
    derived.append(derived[0])  # the derived list is the caller's; the messages in it are shared values
    assert len(session.derive_messages()) == 1


# ------------------------------------------------------------------ describe agent status invariants


async def test_accepts_legal_transitions_idle_running_idle_and_disposed() -> None:
    """accepts legal transitions: idle→running→idle and →disposed"""
    root, _, _ = await boot()
    agent = FakeAgent("a")

    for status in ("idle", "running", "idle", "running", "idle", "disposed"):
        root.emit(AGENT_STATUS, agent, status)

    with pytest.raises(InvariantError, match="left terminal state disposed"):
        root.emit(AGENT_STATUS, agent, "running")


async def test_accepts_running_disposed() -> None:
    """accepts running→disposed"""
    root, _, _ = await boot()
    agent = FakeAgent("a")

    root.emit(AGENT_STATUS, agent, "running")
    root.emit(AGENT_STATUS, agent, "disposed")

    with pytest.raises(InvariantError, match="repeated disposed"):
        root.emit(AGENT_STATUS, agent, "disposed")


async def test_rejects_a_no_op_transition() -> None:
    """rejects a no-op transition"""
    root, _, _ = await boot()
    agent = FakeAgent("a")
    root.emit(AGENT_STATUS, agent, "running")

    with pytest.raises(InvariantError, match=r"agent/status repeated running \(no-op transition\)"):
        root.emit(AGENT_STATUS, agent, "running")


async def test_rejects_leaving_the_terminal_disposed_state() -> None:
    """rejects leaving the terminal disposed state"""
    root, _, _ = await boot()
    agent = FakeAgent("a")
    root.emit(AGENT_STATUS, agent, "disposed")

    with pytest.raises(InvariantError, match="agent/status left terminal state disposed → idle"):
        root.emit(AGENT_STATUS, agent, "idle")


async def test_tracks_status_per_agent_independently() -> None:
    """tracks status per agent independently"""
    root, _, _ = await boot()
    first, second = FakeAgent("a"), FakeAgent("b")

    root.emit(AGENT_STATUS, first, "running")
    root.emit(AGENT_STATUS, second, "running")
    root.emit(AGENT_STATUS, first, "disposed")
    root.emit(AGENT_STATUS, second, "idle")

    with pytest.raises(InvariantError, match="repeated idle"):
        root.emit(AGENT_STATUS, second, "idle")


class Slotless:
    """A minimal agent stand-in with ``__slots__`` and no ``__weakref__``."""

    __slots__ = ("id",)

    def __init__(self, agent_id: str) -> None:
        self.id = agent_id


async def test_tracks_status_of_agents_that_cannot_be_weakly_referenced() -> None:
    """Status tracking does not depend on weak references to the agent."""
    root, _, _ = await boot()
    plain, slotted = FakeAgent("plain"), cast(Agent, Slotless("slotted"))

    root.emit(AGENT_STATUS, plain, "running")
    root.emit(AGENT_STATUS, slotted, "running")

    with pytest.raises(InvariantError, match="repeated running"):
        root.emit(AGENT_STATUS, slotted, "running")


# ------------------------------------------------------------------ describe HMR safety


async def test_removes_all_listeners_when_the_plugin_fiber_is_disposed() -> None:
    """removes all listeners when the plugin fiber is disposed"""
    root = Context()
    await root.plugin(SessionStore)
    events = (SESSION_CREATED, SESSION_EVENT, AGENT_STATUS)
    before = [root.listener_count(event) for event in events]

    fiber = await root.plugin(invariants)
    assert [root.listener_count(event) for event in events] == [count + 1 for count in before]
    await fiber.dispose()

    assert [root.listener_count(event) for event in events] == before
    assert fiber.effect_count == 0


async def test_invariant_error_carries_a_stable_code() -> None:
    """InvariantError carries a stable code"""
    _, sessions, _ = await boot()
    session = sessions.create("s")

    with pytest.raises(InvariantError) as caught:
        session.append("usage", {"turn": 1, "step": 1, "usage": USAGE})

    error = caught.value
    assert isinstance(error, HarnessError)
    assert error.code == "INVARIANT"
    assert error.name == "InvariantError"
    assert str(error).startswith("invariant violated: ")
    assert invariants.InvariantError is InvariantError


async def test_does_not_leak_listeners_across_dispose() -> None:
    """does not leak listeners across dispose (no stale checks)"""
    root, sessions, fiber = await boot()
    session = sessions.create("s")
    await fiber.dispose()

    session.append("usage", {"turn": 9, "step": 9, "usage": USAGE})  # would violate if checked
    open_turn(session, 5)

    agent = FakeAgent("a")
    root.emit(AGENT_STATUS, agent, "idle")
    root.emit(AGENT_STATUS, agent, "idle")  # a repeat nobody checks any more
    assert session.seq == 2


# ------------------------------------------------------------------ config


async def test_config_takes_no_fields_and_rejects_unknown_ones() -> None:
    """Config: no settings (the old ``freeze`` is gone); any field is a config error naming it."""
    assert invariants.Config().model_dump() == {}
    root = Context()
    await root.plugin(SessionStore)

    with pytest.raises(ConfigError, match="frezee"):
        await root.plugin(invariants, {"frezee": False})
    with pytest.raises(ConfigError, match="freeze"):
        await root.plugin(invariants, {"freeze": True})


async def test_the_plugin_waits_for_the_sessions_service() -> None:
    """inject = ["sessions"]: the plugin pends until a store exists and goes with it."""
    root = Context()
    fiber = await root.plugin(invariants)
    assert state_of(fiber) is FiberState.PENDING
    assert root.listener_count(SESSION_EVENT) == 0

    store_fiber = await root.plugin(SessionStore)
    for _ in range(10):  # the dependent boots on a later tick
        if state_of(fiber) is FiberState.ACTIVE:
            break
        await asyncio.sleep(0)
    assert state_of(fiber) is FiberState.ACTIVE
    assert root.listener_count(SESSION_EVENT) == 1

    await store_fiber.dispose()
    assert root.listener_count(SESSION_EVENT) == 0


def state_of(fiber: Fiber) -> FiberState:
    return fiber.state
