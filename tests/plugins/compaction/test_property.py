"""Property: whatever the history and the budget, compaction never orphans a tool call.

Random sessions (turns of steps with zero to three tool calls, results of random
size, some turns aborted before their last step) are compacted again and again
with the plugin's own choices (:func:`choose_cut`, :func:`prunable`) at random
budgets; after every compaction each tool call in the derived history has its result
after it, and each result has its call before it.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.core.llm import Message, TextBlock, ToolCallBlock, ToolResultBlock
from dsh.core.session import CompactionData, CompactionEvent, Session, derive_messages
from dsh.plugins.compaction.history import choose_cut, log_view, prunable
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

Turn = list[list[int]]  # steps; each step: the output sizes of its tool calls


def add_turn(session: Session, number: int, steps: Turn) -> None:
    session.append("turn/start", turn_start(number))
    session.append("user/message", user_message(f"question {number}"))
    for index, sizes in enumerate(steps, 1):
        session.append("step/start", step(number, index))
        calls = [tool_call_block(f"t{number}s{index}c{n}") for n in range(len(sizes))]
        session.append("assistant/message", assistant_message(number, index, *calls or [text("answer")]))
        for n, size in enumerate(sizes):
            session.append("tool/result", tool_result(number, index, f"t{number}s{index}c{n}", "x" * size))
        session.append("step/end", step(number, index))
    session.append("turn/end", turn_end(number))


def assert_balanced(messages: list[Message]) -> None:
    pending: set[str] = set()
    for message in messages:
        for block in message.content:
            if type(block) is ToolCallBlock:
                pending.add(block.id)
            elif type(block) is ToolResultBlock:
                assert block.tool_call_id in pending, f"result {block.tool_call_id} without its call"
                pending.remove(block.tool_call_id)
        if message.role == "user" and not any(type(b) is ToolResultBlock for b in message.content):
            assert not pending, f"calls {pending} without results before the next prompt"
    assert not pending, f"calls {pending} without results"


sizes = st.lists(st.integers(min_value=0, max_value=3000), max_size=3)
turns = st.lists(st.lists(sizes, min_size=1, max_size=4), min_size=1, max_size=4)


@settings(max_examples=120, deadline=None)
@given(
    rounds=st.lists(
        st.tuples(turns, st.one_of(st.none(), st.integers(min_value=0, max_value=4000))), min_size=1, max_size=4
    ),
    limit=st.integers(min_value=100, max_value=2000),
)
def test_compaction_never_orphans_a_tool_call(rounds: list[tuple[list[Turn], int | None]], limit: int) -> None:
    session = Session("s")
    number = 0
    for new_turns, budget in rounds:
        for steps in new_turns:
            number += 1
            add_turn(session, number, steps)
        events = session.events
        view = log_view(events)
        cut = choose_cut(events, view.kept_from, budget)
        pruned = tuple(prunable(events, view, len(events), limit, limit // 4))
        if cut is None:
            data = CompactionData(trigger="pressure", pruned=pruned)
        else:
            data = CompactionData(trigger="pressure", summary="summary", kept_from=cut, pruned=pruned)
        session.append(CompactionEvent, data)
        derived = session.derive_messages()
        assert derived == derive_messages(session.events)
        assert_balanced(derived)
        if cut is not None:
            assert derived[0].content[0] == TextBlock(text="summary")
