"""The ``compaction`` event: what the model sees from it on is derived from the log alone."""

from __future__ import annotations

from typing import Any

from dsh.core.llm import Message, TextBlock, ToolResultBlock, text_of
from dsh.core.session import (
    CompactionEvent,
    Session,
    derive_messages,
    parse_session_event_line,
    session_event_line,
)
from dsh.core.session.derive import INTERRUPTED_NOTE, derive_message
from tests.core.session.helpers import (
    assistant_message,
    step,
    text,
    tool_call_block,
    tool_result,
    turn_end,
    turn_start,
    user_message,
)


def exchange(session: Session, turn: int, output: str = "output") -> None:
    """One turn: a question, a tool call and its result, an answer."""
    session.append("turn/start", turn_start(turn))
    session.append("user/message", user_message(f"question {turn}"))
    session.append("step/start", step(turn, 1))
    session.append("assistant/message", assistant_message(turn, 1, tool_call_block(f"c{turn}")))
    session.append("tool/result", tool_result(turn, 1, f"c{turn}", f"{output} {turn}"))
    session.append("step/end", step(turn, 1))
    session.append("step/start", step(turn, 2))
    session.append("assistant/message", assistant_message(turn, 2, text(f"answer {turn}")))
    session.append("step/end", step(turn, 2))
    session.append("turn/end", turn_end(turn))


def texts(messages: list[Message]) -> list[str]:
    out = []
    for message in messages:
        for block in message.content:
            if type(block) is ToolResultBlock:
                out.append(f"result:{text_of(block.content)}")
            elif type(block) is TextBlock:
                out.append(block.text)
            else:
                out.append(f"call:{block.id}")  # type: ignore[union-attr]
    return out


def first_seq(session: Session, turn: int) -> int:
    return next(e.seq for e in session.events if e.type == "user/message" and f"question {turn}" in str(e.data))


def compaction(session: Session, **data: Any) -> CompactionEvent:
    event = session.append("compaction", {"trigger": "pressure", **data})
    assert type(event) is CompactionEvent
    return event


def test_a_summary_stands_for_the_events_before_kept_from_and_later_events_follow() -> None:
    session = Session("s")
    for turn in (1, 2):
        exchange(session, turn)
    live = session.derive_messages()  # derived before the compaction, extended after it
    compaction(session, summary="turn 1 was about c1", keptFrom=first_seq(session, 2))
    exchange(session, 3)
    expected = ["turn 1 was about c1", "question 2", "call:c2", "result:output 2", "answer 2"]
    expected += ["question 3", "call:c3", "result:output 3", "answer 3"]
    assert texts(session.derive_messages()) == expected
    assert texts(derive_messages(session.events)) == expected
    assert texts(derive_messages(iter(list(session.events)))) == expected
    assert session.derive_messages()[0] == Message(role="user", content=(TextBlock(text="turn 1 was about c1"),))
    assert len(live) == 8


def test_pruned_results_are_shown_shortened_and_stay_so_under_a_later_summary() -> None:
    session = Session("s")
    for turn in (1, 2, 3):
        exchange(session, turn, output="long output")
    results = [e for e in session.events if e.type == "tool/result"]
    pruned = [
        {"originalSeq": r.seq, "callId": f"c{n}", "charsBefore": 14, "charsAfter": 7, "content": [text(f"short {n}")]}
        for n, r in zip((1, 2), results, strict=False)
    ]
    compaction(session, pruned=pruned)
    assert texts(session.derive_messages())[2:4] == ["result:short 1", "answer 1"]
    compaction(session, summary="earlier", keptFrom=first_seq(session, 2))
    assert texts(session.derive_messages())[:4] == ["earlier", "question 2", "call:c2", "result:short 2"]
    assert "result:long output 3" in texts(session.derive_messages())
    # a prune-only compaction after a summary keeps the summary and its cut
    compaction(session, pruned=[{**pruned[0], "originalSeq": results[2].seq, "callId": "c3"}])
    assert texts(session.derive_messages())[:2] == ["earlier", "question 2"]
    assert "result:short 1" in texts(session.derive_messages())  # the content given for turn 3's result
    assert texts(session.derive_messages()) == texts(derive_messages(session.events))


def test_a_failed_attempt_changes_nothing_and_a_summary_without_a_cut_replaces_everything_before_it() -> None:
    session = Session("s")
    exchange(session, 1)
    before = session.derive_messages()
    compaction(session, summary="ignored", keptFrom=3, error="the summary did not shrink the history")
    assert session.derive_messages() == before
    event = compaction(session, summary="all of it")
    assert texts(session.derive_messages()) == ["all of it"]
    assert derive_message(event) is None
    compaction(session, keptFrom=first_seq(session, 1))  # a cut without a summary: the history from there
    assert texts(session.derive_messages()) == ["all of it", "question 1", "call:c1", "result:output 1", "answer 1"]


def test_an_aborted_turn_in_the_kept_tail_keeps_its_interruption_note() -> None:
    session = Session("s")
    exchange(session, 1)
    session.append("turn/start", turn_start(2))
    session.append("user/message", user_message("question 2"))
    session.append("turn/end", turn_end(2, "aborted"))
    compaction(session, summary="turn 1", keptFrom=first_seq(session, 2))
    assert texts(session.derive_messages()) == ["turn 1", "question 2", INTERRUPTED_NOTE]


def test_a_compaction_line_round_trips_without_its_absent_fields() -> None:
    session = Session("s")
    event = compaction(session, summary="x", keptFrom=0, tokensBefore=10, tokensAfter=2)
    line = session_event_line(event)
    assert line == (
        f'{{"type":"compaction","seq":0,"time":{event.time},"data":{{"trigger":"pressure","summary":"x",'
        '"keptFrom":0,"tokensBefore":10,"tokensAfter":2}}'
    )
    assert parse_session_event_line(line) == event
