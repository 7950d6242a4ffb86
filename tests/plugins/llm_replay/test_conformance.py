"""Acceptance: the recorded conformance session replays exactly, alone and through the real loop.

The recording lives in ``tests/examples/acp/reference/tool-call-turn/`` (the reference
conformance cases kept in the repository); a missing folder fails these tests.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from dsh.core.errors import HarnessError
from dsh.core.llm import LlmService, parse_content_block, to_json
from dsh.core.session import SESSION_EVENT, Session, SessionEvent
from dsh.kernel import Context
from dsh.plugins import llm_replay
from dsh.testing.harness import Harness
from tests.plugins.llm_replay.helpers import CONFORMANCE, collect, options

CASE = CONFORMANCE / "tool-call-turn"


def recorded_events() -> list[dict[str, Any]]:
    session = CASE / "session.jsonl"
    assert session.is_file(), (
        f"conformance recording missing: {session} (restore tests/examples/acp/reference from the repository)"
    )
    lines = [line for line in session.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [json.loads(line) for line in lines[1:]]


def recorded_calls(events: list[dict[str, Any]]) -> list[tuple[tuple[int, int], list[dict[str, Any]]]]:
    """The recorded chunks of each model call: ``assistant/chunk`` data grouped by (turn, step)."""
    chunk_data = [item["data"] for item in events if item["type"] == "assistant/chunk"]
    return [
        (key, [data["chunk"] for data in group])
        for key, group in itertools.groupby(chunk_data, key=lambda data: (data["turn"], data["step"]))
    ]


def of_type(events: Iterable[Mapping[str, Any]], kind: str) -> list[Any]:
    return [item["data"] for item in events if item["type"] == kind]


async def test_the_recorded_tool_call_turn_replays_its_chunks_step_by_step(root: Context, llm: LlmService) -> None:
    """Extra (issue acceptance): each model call yields exactly the recorded chunks of its step."""
    calls = recorded_calls(recorded_events())
    assert [key for key, _ in calls] == [(1, 1), (1, 2)]
    await root.plugin(llm_replay, {"file": str(CASE / "session.jsonl")})
    for _, chunks in calls:
        assert to_json(await collect(llm.stream(options("whatever-model")))) == chunks
    with pytest.raises(HarnessError, match="script exhausted — requested model call #3 but the fixture has only 2"):
        await collect(llm.stream(options()))


async def test_the_recorded_tool_call_turn_replays_through_the_real_agent_loop() -> None:
    """Extra (issue acceptance): the real loop driven by the replay logs the recorded messages and chunks."""
    events = recorded_events()
    prompt = [parse_content_block(block) for block in of_type(events, "user/message")[0]["content"]]
    async with Harness() as h:
        await h.ctx.plugin(llm_replay, {"file": str(CASE / "session.jsonl")})
        agent = h.agent("main", model="replayed-model")
        turn_ended: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def on_event(session: Session, event: SessionEvent) -> None:
            if session is agent.session and event.type == "turn/end" and not turn_ended.done():
                turn_ended.set_result(None)

        h.ctx.on(SESSION_EVENT, on_event)
        agent.send(prompt)
        await turn_ended
        await agent.when_idle()
        log = to_json(list(agent.session.events))
        replayed_messages = of_type(log, "assistant/message")
        assert [message["content"] for message in replayed_messages] == [
            message["content"] for message in of_type(events, "assistant/message")
        ]
        assert [(m["turn"], m["step"]) for m in replayed_messages] == [(1, 1), (1, 2)]
        assert of_type(log, "assistant/chunk") == of_type(events, "assistant/chunk")
        assert of_type(log, "usage") == of_type(events, "usage")
        assert of_type(log, "tool/call") == of_type(events, "tool/call")
        assert of_type(log, "turn/end")[-1]["reason"] == {"kind": "completed"}
        assert h.model.requests == []  # the scripted "mock" model was never reached


def test_the_conformance_folder_is_inside_the_repository() -> None:
    """Extra: the recording is read from the repository's own copy, never from outside it."""
    expected = Path(__file__).resolve().parents[2] / "examples" / "acp" / "reference"
    assert expected == CONFORMANCE
    assert CASE.is_dir(), f"missing conformance case folder {CASE}"
