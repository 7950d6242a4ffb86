"""SPEC §14.13 — ``packages/acp/tests/properties.spec.ts`` (describe ``ACP update-stream invariants (property-based)``).

Random session logs (turns of steps with text/reasoning/other chunks, tool calls
followed by their results, user and context messages, usage and errors) are
streamed through :func:`dsh.acp.stream_session_event_update`.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from acp.schema import SessionNotification
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.acp import TerminalContext, ToolPresenter, stream_session_event_update
from dsh.core.llm import (
    BlockStartChunk,
    ContentBlock,
    ImageBlock,
    ReasoningBlock,
    ReasoningDeltaChunk,
    TextDeltaChunk,
    TokenUsage,
    UsageChunk,
)
from dsh.core.session import SessionEvent
from dsh.core.tools import ToolDefinition
from tests.acp.events import chunk, event, plain_tool, shell_tool, text, tool_call, tool_result, user_message

LIVE_VARIANTS = {"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update"}


class Tools:
    """The registry seam the presenter reads (``get(name)``), over real tool definitions."""

    def __init__(self, *definitions: ToolDefinition) -> None:
        self._tools = {definition.name: definition for definition in definitions}

    def get(self, name: str) -> ToolDefinition | None:
        return self._tools.get(name)


TOOLS = Tools(shell_tool("shell"), plain_tool("read_file"))

words = st.text(alphabet=st.characters(codec="utf-8"), max_size=8)  # utf-8: no lone surrogates
tool_names = st.sampled_from(["shell", "read_file", "bash", "edit", "unknown_tool"])
arguments = st.one_of(
    st.fixed_dictionaries({"command": words, "description": words}),
    st.dictionaries(st.sampled_from(["a", "b", "workdir"]), words, max_size=2),
    words,  # possibly not JSON at all
)
blocks: st.SearchStrategy[list[ContentBlock]] = st.lists(
    st.one_of(
        st.builds(text, words),
        st.just(ImageBlock(url="data:,")),
        st.just(ReasoningBlock(text="r")),
        st.just(msgspec.Raw(b'{"type":"hologram"}')),  # a block from a newer writer
    ),
    max_size=3,
)


@st.composite
def step_events(draw: st.DrawFn, call_ids: list[int]) -> list[SessionEvent]:
    out: list[SessionEvent] = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["text-delta", "reasoning-delta", "block-start", "usage"]))
        if kind == "text-delta":
            out.append(chunk(TextDeltaChunk(index=0, text=draw(words))))
        elif kind == "reasoning-delta":
            out.append(chunk(ReasoningDeltaChunk(index=0, text=draw(words))))
        elif kind == "block-start":
            out.append(chunk(BlockStartChunk(index=0, block_type="text")))
        else:
            out.append(chunk(UsageChunk(usage=TokenUsage(input_tokens=1, output_tokens=1))))
    for _ in range(draw(st.integers(0, 2))):
        call_ids.append(len(call_ids))
        call_id = f"call-{call_ids[-1]}"
        raw = draw(arguments)
        out.append(tool_call(call_id, draw(tool_names), raw if isinstance(raw, str) else json.dumps(raw)))
        out.append(tool_result(call_id, draw(blocks), is_error=draw(st.booleans())))
    return out


@st.composite
def session_logs(draw: st.DrawFn) -> list[SessionEvent]:
    call_ids: list[int] = []
    log: list[SessionEvent] = []
    for turn in range(1, draw(st.integers(1, 3)) + 1):
        source = {"kind": "user"}
        log.append(event("turn/start", {"turn": turn, "trigger": {"kind": "message", "source": source}}))
        log.append(user_message(draw(blocks)))
        for step in range(1, draw(st.integers(1, 2)) + 1):
            log.append(event("step/start", {"turn": turn, "step": step}))
            log.extend(draw(step_events(call_ids)))
            if draw(st.booleans()):
                content = [{"type": "text", "text": draw(words)}]
                log.append(event("context/message", {"content": content, "source": {"kind": "plugin", "plugin": "p"}}))
            if draw(st.booleans()):
                log.append(event("plugin/note", {"step": step}))  # a type this version does not define
            log.append(event("step/end", {"turn": turn, "step": step}))
        log.append(event("turn/end", {"turn": turn, "reason": {"kind": "completed"}}))
    return [msgspec.structs.replace(item, seq=index) for index, item in enumerate(log)]


terminals = st.builds(TerminalContext, st.booleans(), st.one_of(st.none(), st.just("/work"), st.just("/tmp/x")))


def stream(log: list[SessionEvent], terminal: TerminalContext, include_user_messages: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    presenter = ToolPresenter(TOOLS)
    for item in log:
        stream_session_event_update("s", item, out.append, presenter, terminal, include_user_messages)
    return out


@settings(max_examples=150, deadline=None)
@given(session_logs(), terminals)
def test_every_emitted_update_is_a_legal_session_update_variant(
    log: list[SessionEvent], terminal: TerminalContext
) -> None:
    """every emitted update is a legal SessionUpdate variant"""
    for notification in stream(log, terminal, include_user_messages=False):
        assert notification["update"]["sessionUpdate"] in LIVE_VARIANTS
        # and it is a valid ACP session/update params object
        SessionNotification.model_validate(json.loads(json.dumps(notification)))
    for notification in stream(log, terminal, include_user_messages=True):
        assert notification["update"]["sessionUpdate"] in LIVE_VARIANTS | {"user_message_chunk"}
        SessionNotification.model_validate(json.loads(json.dumps(notification)))


@settings(max_examples=150, deadline=None)
@given(session_logs(), terminals)
def test_never_emits_a_tool_call_update_for_an_id_before_that_id_s_tool_call(
    log: list[SessionEvent], terminal: TerminalContext
) -> None:
    """never emits a tool_call_update for an id before that id's tool_call"""
    started: set[str] = set()
    for notification in stream(log, terminal, include_user_messages=True):
        update = notification["update"]
        if update["sessionUpdate"] == "tool_call":
            started.add(update["toolCallId"])
        elif update["sessionUpdate"] == "tool_call_update":
            assert update["toolCallId"] in started


@settings(max_examples=150, deadline=None)
@given(session_logs(), terminals)
def test_is_a_pure_function_of_the_event_replay_equals_live(log: list[SessionEvent], terminal: TerminalContext) -> None:
    """is a pure function of the event (replay equals live)"""
    live = stream(log, terminal, include_user_messages=False)
    replay = stream(log, terminal, include_user_messages=True)
    assert [n for n in replay if n["update"]["sessionUpdate"] != "user_message_chunk"] == live
    assert stream(log, terminal, include_user_messages=False) == live


def test_the_streamed_events_cannot_be_changed() -> None:
    """the log is only read: its events are immutable values, shared with the stream"""
    logged = tool_call("c1", "shell", {"command": "ls"})
    with pytest.raises(AttributeError):
        logged.data.name = "other"  # type: ignore[misc]
