"""SPEC §14.13 — ``packages/acp/tests/properties.spec.ts`` (describe ``ACP update-stream invariants (property-based)``).

Random session logs (turns of steps with text/reasoning/other chunks, tool calls
followed by their results, user and context messages, usage and errors) are
streamed through :func:`dsh.acp.stream_session_event_update`.
"""

from __future__ import annotations

import json
from typing import Any

from acp.schema import SessionNotification
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.acp import TerminalContext, ToolPresenter, stream_session_event_update
from dsh.core.tools import ToolDefinition
from tests.acp.events import chunk, event, plain_tool, shell_tool, text, tool_call, tool_result

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
blocks: st.SearchStrategy[list[Any]] = st.lists(
    st.one_of(
        st.builds(text, words), st.just({"type": "image", "url": "data:,"}), st.just({"type": "reasoning", "text": "r"})
    ),
    max_size=3,
)


@st.composite
def step_events(draw: st.DrawFn, call_ids: list[int]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["text-delta", "reasoning-delta", "block-start", "usage"]))
        if kind in ("text-delta", "reasoning-delta"):
            out.append(chunk({"type": kind, "index": 0, "text": draw(words)}))
        elif kind == "block-start":
            out.append(chunk({"type": "block-start", "index": 0, "blockType": "text"}))
        else:
            out.append(chunk({"type": "usage", "usage": {"inputTokens": 1, "outputTokens": 1}}))
    for _ in range(draw(st.integers(0, 2))):
        call_ids.append(len(call_ids))
        call_id = f"call-{call_ids[-1]}"
        raw = draw(arguments)
        out.append(tool_call(call_id, draw(tool_names), raw if isinstance(raw, str) else json.dumps(raw)))
        out.append(tool_result(call_id, draw(blocks), is_error=draw(st.booleans())))
    return out


@st.composite
def session_logs(draw: st.DrawFn) -> list[dict[str, Any]]:
    call_ids: list[int] = []
    log: list[dict[str, Any]] = []
    for turn in range(1, draw(st.integers(1, 3)) + 1):
        source = {"kind": "user"}
        log.append(event("turn/start", {"turn": turn, "trigger": {"kind": "message", "source": source}}))
        log.append(event("user/message", {"content": draw(blocks), "source": source}))
        for step in range(1, draw(st.integers(1, 2)) + 1):
            log.append(event("step/start", {"turn": turn, "step": step}))
            log.extend(draw(step_events(call_ids)))
            if draw(st.booleans()):
                log.append(event("context/message", {"content": draw(blocks), "source": {"kind": "plugin"}}))
            log.append(event("step/end", {"turn": turn, "step": step}))
        log.append(event("turn/end", {"turn": turn, "reason": {"kind": "completed"}}))
    return [{**item, "seq": index} for index, item in enumerate(log)]


terminals = st.builds(TerminalContext, st.booleans(), st.one_of(st.none(), st.just("/work"), st.just("/tmp/x")))


def stream(log: list[dict[str, Any]], terminal: TerminalContext, include_user_messages: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    presenter = ToolPresenter(TOOLS)
    for item in log:
        stream_session_event_update("s", item, out.append, presenter, terminal, include_user_messages)
    return out


@settings(max_examples=150, deadline=None)
@given(session_logs(), terminals)
def test_every_emitted_update_is_a_legal_session_update_variant(
    log: list[dict[str, Any]], terminal: TerminalContext
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
    log: list[dict[str, Any]], terminal: TerminalContext
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
def test_is_a_pure_function_of_the_event_replay_equals_live(
    log: list[dict[str, Any]], terminal: TerminalContext
) -> None:
    """is a pure function of the event (replay equals live)"""
    snapshot = json.dumps(log)
    live = stream(log, terminal, include_user_messages=False)
    replay = stream(log, terminal, include_user_messages=True)
    assert [n for n in replay if n["update"]["sessionUpdate"] != "user_message_chunk"] == live
    assert stream(log, terminal, include_user_messages=False) == live
    assert json.dumps(log) == snapshot  # the log was only read
