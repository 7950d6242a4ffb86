"""Properties of derivation and replay over random recorded sessions (hypothesis)."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.core.llm import (
    LLM,
    BlockStartChunk,
    ErrorFinish,
    LlmService,
    ReasoningDeltaChunk,
    StreamChunk,
    TextDeltaChunk,
    ToolCallsFinish,
)
from dsh.kernel import Context
from dsh.plugins.llm_replay import Config, ReplayEntry, derive_replay_script, install_llm_replay, parse_session_log
from tests.plugins.llm_replay.helpers import collect, entry, event, finish, log_text, options, recorded_call, turn_start

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=6)
BODY_CHUNK = st.one_of(
    st.builds(TextDeltaChunk, st.integers(0, 3), TEXT),
    st.builds(ReasoningDeltaChunk, st.integers(0, 3), TEXT),
    st.builds(lambda i: BlockStartChunk(index=i, block_type="text"), st.integers(0, 3)),
)
FINISH = st.sampled_from([finish(), finish(ToolCallsFinish()), finish(ErrorFinish(message="boom", code="SERVER"))])
CALL = st.builds(lambda body, end: [*body, end], st.lists(BODY_CHUNK, max_size=5), FINISH)
NOISE = st.lists(
    st.sampled_from(
        [
            event("usage", {"turn": 0, "step": 1, "usage": {"inputTokens": 1, "outputTokens": 1}}),
            event("tool/call", {"turn": 0, "step": 1, "callId": "c", "name": "n", "arguments": "{}"}),
            turn_start(1),
            event("x/y", None),
        ]
    ),
    max_size=2,
)


@st.composite
def sessions(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[list[StreamChunk]]]:
    """A random log of model calls with strictly advancing (turn, step) keys and noise between."""
    calls = draw(st.lists(CALL, max_size=5))
    events: list[dict[str, Any]] = []
    turn, step = 1, 0
    for chunks in calls:
        if draw(st.booleans()):
            turn, step = turn + 1, 1
        else:
            step += 1
        events.extend(draw(NOISE))
        events.extend(recorded_call(turn, step, chunks))
    return events, calls


@settings(max_examples=60, deadline=None)
@given(sessions())
def test_derivation_recovers_every_recorded_call_in_order(
    session: tuple[list[dict[str, Any]], list[list[StreamChunk]]],
) -> None:
    """Extra: derive(parse(log)) has one chunks entry per recorded call, in order, chunks intact."""
    events, calls = session
    expected: list[ReplayEntry] = [entry(chunks) for chunks in calls]
    assert derive_replay_script(parse_session_log(log_text(events))) == expected


async def _replay(text: str, count: int, tmp: str) -> list[list[StreamChunk]]:
    file = Path(tmp) / "session.jsonl"
    file.write_text(text, encoding="utf-8")
    root = Context()
    try:
        await root.plugin(LlmService)
        llm = root[LLM]
        install_llm_replay(root, Config(file=str(file)))
        streams = [llm.stream(options(f"model-{n}")) for n in range(count)]
        return [await collect(stream) for stream in streams]
    finally:
        await root.dispose()


@settings(max_examples=30, deadline=None)
@given(sessions())
def test_replay_serves_the_recorded_calls_positionally(
    session: tuple[list[dict[str, Any]], list[list[StreamChunk]]],
) -> None:
    """Extra: through the real waterfall, call n streams exactly the n-th recorded call."""
    events, calls = session
    with tempfile.TemporaryDirectory() as tmp:
        assert asyncio.run(_replay(log_text(events), len(calls), tmp)) == calls
