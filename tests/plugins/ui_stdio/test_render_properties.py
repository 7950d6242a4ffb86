"""Renderer properties over random activity: SGR codes balance, and only reasoning is dimmed."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from dsh.core.llm import BlockEndChunk, ReasoningDeltaChunk, TextDeltaChunk, UserSource, text
from dsh.core.session import (
    MessageData,
    ToolCallData,
    ToolCallEvent,
    ToolResultData,
    ToolResultEvent,
    UntypedEvent,
    UserMessageEvent,
)
from dsh.plugins.ui_stdio import DIM, PROMPT, RESET, Renderer

words = st.text(alphabet="abc xyz\n", max_size=6)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("reasoning"), words),
        st.tuples(st.just("text"), words),
        st.tuples(st.just("turn_start"), st.integers(1, 9)),
        st.tuples(st.just("turn_end"), st.none()),
        st.tuples(st.just("tool_call"), words),
        st.tuples(st.just("tool_result"), words),
        st.tuples(st.just("other_chunk"), words),
        st.tuples(st.just("other_event"), words),
    ),
    max_size=30,
)


def play(renderer: Renderer, operation: tuple[str, Any]) -> None:
    kind, value = operation
    if kind == "reasoning":
        renderer.chunk(ReasoningDeltaChunk(index=0, text=value))
    elif kind == "text":
        renderer.chunk(TextDeltaChunk(index=1, text=value))
    elif kind == "turn_start":
        renderer.turn_start("main", value)
    elif kind == "turn_end":
        renderer.turn_end()
    elif kind == "tool_call":
        call = ToolCallData(turn=1, step=1, call_id="c", name="t", arguments=value)
        renderer.session_event(ToolCallEvent(seq=0, time=0, data=call))
    elif kind == "tool_result":
        result = ToolResultData(turn=1, step=1, call_id="c", content=(text(value),), is_error=False)
        renderer.session_event(ToolResultEvent(seq=0, time=0, data=result))
    elif kind == "other_chunk":
        renderer.chunk(BlockEndChunk(index=0, block=text(value)))
    elif value:
        renderer.session_event(UntypedEvent(type="plugin/note", seq=0, time=0, data={"text": value}))
    else:
        message = MessageData(content=(), source=UserSource())
        renderer.session_event(UserMessageEvent(seq=0, time=0, data=message))


@given(operations)
def test_dim_runs_alternate_and_hold_exactly_what_was_written_during_reasoning(ops: list[tuple[str, Any]]) -> None:
    """Codes go DIM, RESET, DIM, ...; a dim run holds the reasoning (and whatever does not end it)."""
    pieces: list[str] = []
    renderer = Renderer(pieces.append)
    in_reasoning = False
    expected_dimmed = ""
    for operation in ops:
        before = len("".join(pieces))
        play(renderer, operation)
        written = "".join(pieces)[before:]
        kind = operation[0]
        if kind == "reasoning":
            in_reasoning = True
        elif kind in ("text", "turn_end", "tool_call"):
            in_reasoning = False
        if in_reasoning:
            expected_dimmed += written.replace(DIM, "")
        assert renderer.dim == in_reasoning
        if kind == "turn_end":
            assert written.endswith(PROMPT)
    output = "".join(pieces)
    codes = re.findall("\x1b\\[[02]m", output)
    assert codes == ([DIM, RESET] * len(codes))[: len(codes)]
    assert renderer.dim == (len(codes) % 2 == 1)
    dimmed = "".join(re.findall("\x1b\\[2m(.*?)(?:\x1b\\[0m|\\Z)", output, flags=re.DOTALL))
    assert dimmed == expected_dimmed
