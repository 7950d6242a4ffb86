"""Crash repair (SPEC §3.6, tests of §3.8 describe "interruptedTurnClosers")."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from dsh.core.llm import ToolResultBlock, to_json
from dsh.core.llm import text as typed_text
from dsh.core.session import (
    INTERRUPTED_RESULT_TEXT,
    InterruptedReason,
    Session,
    SessionEvent,
    StepData,
    StepEndEvent,
    ToolErrorInfo,
    ToolResultData,
    ToolResultEvent,
    TurnEndData,
    TurnEndEvent,
    interrupted_turn_closers,
    is_turn_open,
)
from tests.core.session.helpers import (
    assistant_message,
    log,
    one_turn_log,
    step,
    text,
    tool_call_block,
    tool_result,
    turn_end,
    turn_start,
    user_message,
)

INTERRUPTED = {"kind": "interrupted"}


def closers_json(events: Iterable[SessionEvent]) -> Any:
    """The closers of ``events`` in their JSON form (what a repaired log appends)."""
    return to_json(interrupted_turn_closers(events))


def _synthetic_result(turn: int, step_number: int, call_id: str) -> dict[str, object]:
    return {
        "turn": turn,
        "step": step_number,
        "callId": call_id,
        "content": [{"type": "text", "text": "Tool call interrupted by a crash; no result was recorded."}],
        "isError": True,
        "error": {"name": "InterruptedError", "code": "interrupted"},
    }


def test_returns_nothing_for_a_balanced_log_ends_on_turn_end() -> None:
    """returns nothing for a balanced log (ends on turn/end)"""
    assert interrupted_turn_closers(one_turn_log() + one_turn_log(turn=2, start=6)) == []


def test_returns_nothing_for_an_empty_log() -> None:
    """returns nothing for an empty log"""
    assert interrupted_turn_closers([]) == []


def test_closes_an_open_turn_with_no_open_step_turn_end_interrupted_only() -> None:
    """closes an open turn with no open step (turn/end {interrupted} only)"""
    events = log(("turn/start", turn_start(1)), time=77)
    closers = closers_json(events)
    assert closers == [{"type": "turn/end", "seq": 1, "time": 77, "data": {"turn": 1, "reason": INTERRUPTED}}]


def test_closes_an_open_step_before_the_turn_step_end_then_turn_end() -> None:
    """closes an open step before the turn (step/end then turn/end)"""
    events = log(("turn/start", turn_start(1)), ("step/start", step(1, 1)))
    closers = closers_json(events)
    assert [(closer["type"], closer["seq"]) for closer in closers] == [("step/end", 2), ("turn/end", 3)]
    assert closers[0]["data"] == {"turn": 1, "step": 1}
    assert closers[1]["data"] == {"turn": 1, "reason": INTERRUPTED}


def test_synthesizes_an_error_tool_result_for_a_tool_call_the_crash_left_unanswered() -> None:
    """synthesizes an error tool/result for a tool-call the crash left unanswered"""
    events = log(
        ("turn/start", turn_start(2)),
        ("step/start", step(2, 1)),
        ("assistant/message", assistant_message(2, 1, text("running"), tool_call_block("call-1"))),
    )
    closers = closers_json(events)
    assert [(closer["type"], closer["seq"]) for closer in closers] == [
        ("tool/result", 3),
        ("step/end", 4),
        ("turn/end", 5),
    ]
    result = closers[0]["data"]
    assert result == _synthetic_result(2, 1, "call-1")
    assert list(result) == ["turn", "step", "callId", "content", "isError", "error"]
    assert result["content"] == [text(INTERRUPTED_RESULT_TEXT)]
    assert closers[2]["data"] == {"turn": 2, "reason": INTERRUPTED}


def test_does_not_synthesize_a_result_for_a_tool_call_that_already_has_one() -> None:
    """does NOT synthesize a result for a tool-call that already has one"""
    events = log(
        ("turn/start", turn_start(1)),
        ("step/start", step(1, 1)),
        ("assistant/message", assistant_message(1, 1, tool_call_block("call-1"))),
        ("tool/result", tool_result(1, 1, "call-1", "done")),
    )
    closers = closers_json(events)
    assert [(closer["type"], closer["seq"]) for closer in closers] == [("step/end", 4), ("turn/end", 5)]


def test_does_not_synthesize_a_result_after_the_owning_step_already_closed() -> None:
    """does NOT synthesize a result after the owning step already closed"""
    events = log(
        ("turn/start", turn_start(1)),
        ("step/start", step(1, 1)),
        ("assistant/message", assistant_message(1, 1, tool_call_block("call-1"))),
        ("step/end", step(1, 1)),
    )
    closers = closers_json(events)
    assert [(closer["type"], closer["seq"]) for closer in closers] == [("turn/end", 4)]


def test_synthesizes_results_only_for_the_still_open_turn_not_a_committed_earlier_turn() -> None:
    """synthesizes results only for the still-open turn, not a committed earlier turn"""
    events = log(
        ("turn/start", turn_start(1)),
        ("step/start", step(1, 1)),
        ("assistant/message", assistant_message(1, 1, tool_call_block("old-call"))),
        ("turn/end", turn_end(1, "aborted")),
        ("turn/start", turn_start(2)),
        ("step/start", step(2, 1)),
        ("assistant/message", assistant_message(2, 1, tool_call_block("new-call"))),
    )
    closers = closers_json(events)
    results = [closer["data"]["callId"] for closer in closers if closer["type"] == "tool/result"]
    assert results == ["new-call"]
    assert closers[0]["data"]["turn"] == 2
    assert [closer["seq"] for closer in closers] == [7, 8, 9]


def test_synthesizes_a_result_for_each_of_multiple_unanswered_calls_in_log_order() -> None:
    """synthesizes a result for each of multiple unanswered calls, in log order"""
    events = log(
        ("turn/start", turn_start(1)),
        ("step/start", step(1, 1)),
        (
            "assistant/message",
            assistant_message(1, 1, tool_call_block("call-a"), tool_call_block("call-b"), tool_call_block("call-c")),
        ),
        ("tool/result", tool_result(1, 1, "call-a", "a done")),
        ("tool/result", tool_result(1, 1, "call-c", "c done")),
    )
    closers = closers_json(events)
    assert [closer["data"].get("callId") for closer in closers if closer["type"] == "tool/result"] == ["call-b"]
    assert [closer["type"] for closer in closers] == ["tool/result", "step/end", "turn/end"]


# ----------------------------------------------------------------- beyond §3.8
def test_a_new_step_keeps_earlier_unanswered_calls_of_the_turn_with_their_own_step() -> None:
    events = log(
        ("turn/start", turn_start(3)),
        ("step/start", step(3, 1)),
        ("assistant/message", assistant_message(3, 1, tool_call_block("first"))),
        ("step/start", step(3, 2)),
        ("assistant/message", assistant_message(3, 2, tool_call_block("second"))),
        time=9,
    )
    closers = closers_json(events)
    assert [closer["data"] for closer in closers] == [
        _synthetic_result(3, 1, "first"),
        _synthetic_result(3, 2, "second"),
        {"turn": 3, "step": 2},
        {"turn": 3, "reason": INTERRUPTED},
    ]
    assert {closer["time"] for closer in closers} == {9}


def test_an_open_turn_with_unknown_events_and_messages_only_needs_its_turn_end() -> None:
    events = log(
        ("turn/start", turn_start(1)),
        ("user/message", user_message("hi")),
        ("plugin/whatever", {"anything": True}),
    )
    assert [closer["type"] for closer in closers_json(events)] == ["turn/end"]


def test_closers_applied_to_a_session_leave_a_balanced_log() -> None:
    events = log(
        ("turn/start", turn_start(1)),
        ("step/start", step(1, 1)),
        ("assistant/message", assistant_message(1, 1, tool_call_block("c"))),
    )
    closers = interrupted_turn_closers(events)
    session = Session("repaired", events + closers)
    assert not is_turn_open(session)
    assert interrupted_turn_closers(session.events) == []
    assert type(session.derive_messages()[-1].content[0]) is ToolResultBlock
    assert len(events) == 3


def test_events_before_any_turn_start_need_no_closer() -> None:
    """(no turn boundary at all: nothing is open, whatever steps or calls the log holds)"""
    events = log(
        ("step/start", step(1, 1)),
        ("assistant/message", assistant_message(1, 1, tool_call_block("call-1"))),
    )
    assert interrupted_turn_closers(events) == []


def test_any_iterable_of_events_is_accepted() -> None:
    """(a one-shot iterator gives the same closers as the list it came from)"""
    events = one_turn_log() + log(
        ("turn/start", turn_start(2)),
        ("step/start", step(2, 1)),
        ("assistant/message", assistant_message(2, 1, tool_call_block("call-9"))),
        start=6,
    )
    assert interrupted_turn_closers(iter(events)) == interrupted_turn_closers(events)
    assert [closer.type for closer in interrupted_turn_closers(iter(events))] == [
        "tool/result",
        "step/end",
        "turn/end",
    ]


def test_only_the_open_turn_is_read() -> None:
    """(the scan starts at the last turn/start: earlier events are never looked at)"""

    class Tripwire(Sequence[SessionEvent]):
        def __init__(self, events: list[SessionEvent], first: int) -> None:
            self.events = events
            self.first = first

        def __len__(self) -> int:
            return len(self.events)

        def __getitem__(self, index: Any) -> Any:
            if index % len(self.events) < self.first:
                raise AssertionError("an event before the open turn was read")
            return self.events[index]

    events = one_turn_log() + log(("turn/start", turn_start(2)), ("step/start", step(2, 1)), start=6)
    assert [closer.type for closer in interrupted_turn_closers(Tripwire(events, 6))] == ["step/end", "turn/end"]


def test_closers_are_typed_events() -> None:
    events = log(
        ("turn/start", turn_start(2)),
        ("step/start", step(2, 1)),
        ("assistant/message", assistant_message(2, 1, tool_call_block("call-1"))),
        time=5,
    )
    result, step_end, turn_end_ = interrupted_turn_closers(events)
    assert result == ToolResultEvent(
        seq=3,
        time=5,
        data=ToolResultData(
            turn=2,
            step=1,
            call_id="call-1",
            content=(typed_text(INTERRUPTED_RESULT_TEXT),),
            is_error=True,
            error=ToolErrorInfo(name="InterruptedError", code="interrupted"),
        ),
    )
    assert step_end == StepEndEvent(seq=4, time=5, data=StepData(turn=2, step=1))
    assert turn_end_ == TurnEndEvent(seq=5, time=5, data=TurnEndData(turn=2, reason=InterruptedReason()))
    with pytest.raises(AttributeError):
        turn_end_.seq = 0  # type: ignore[misc]
