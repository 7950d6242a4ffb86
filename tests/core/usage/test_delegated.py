"""Sub-agents' usage in a parent's log: ``subagent/end`` events roll up into summarize_usage."""

from __future__ import annotations

from typing import Any

import msgspec

from dsh.core.llm import TokenUsage, UserSource
from dsh.core.session import (
    MessageTrigger,
    Session,
    TurnStartData,
    TurnStartEvent,
    UntypedEvent,
    UsageData,
    UsageEvent,
    register_event_type,
)
from dsh.core.subagent import SubagentEndData, SubagentEndEvent
from dsh.core.usage import TokenTotals, delegated_usage, summarize_usage

CHILD = TokenTotals(input_tokens=100, output_tokens=40, cache_read_tokens=5)


def _parent_log() -> Session:
    session = Session("p")
    session.append(TurnStartEvent, TurnStartData(turn=1, trigger=MessageTrigger(source=UserSource())))
    session.append(UsageEvent, UsageData(turn=1, step=1, usage=TokenUsage(input_tokens=10, output_tokens=2)))
    session.append(TurnStartEvent, TurnStartData(turn=2, trigger=MessageTrigger(source=UserSource())))
    return session


def test_a_typed_subagent_end_counts_in_the_turn_it_is_logged_in() -> None:
    session = _parent_log()
    dispose = register_event_type(SubagentEndEvent)
    try:
        session.append(
            SubagentEndEvent, SubagentEndData(task_id="t", child_session="c", status="completed", usage=CHILD)
        )
    finally:
        dispose()
    summary = summarize_usage(session.events)
    assert summary.delegated == CHILD
    assert summary.tokens == CHILD.plus(TokenTotals(input_tokens=10, output_tokens=2))
    assert [turn.tokens for turn in summary.turns] == [TokenTotals(input_tokens=10, output_tokens=2), CHILD]
    assert summarize_usage(session.events, start=3).turns[0].turn == 2
    assert summarize_usage(session.events[:2]).delegated is msgspec.UNSET


def test_an_untyped_subagent_end_counts_too_and_malformed_usage_does_not() -> None:
    usage = msgspec.to_builtins(CHILD)
    assert delegated_usage(UntypedEvent(type="subagent/end", seq=0, time=0, data={"usage": usage})) == CHILD
    bad: list[Any] = [{"usage": {"inputTokens": -1}}, {"usage": "many"}, ["not", "an", "object"]]
    for data in bad:
        assert delegated_usage(UntypedEvent(type="subagent/end", seq=0, time=0, data=data)) is None
    assert delegated_usage(UntypedEvent(type="other/end", seq=0, time=0, data={"usage": usage})) is None
    session = _parent_log()
    session.append("subagent/end", {"usage": usage, "taskId": "t"})
    assert summarize_usage(session.events).delegated == CHILD
