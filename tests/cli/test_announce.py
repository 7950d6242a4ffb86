"""`dsh run` names a new session only once its log holds the turn's first events."""

from __future__ import annotations

from typing import cast

from dsh.cli.announce import announce_session
from dsh.core.agent import AGENT_REQUEST, AGENT_TURN_END, Agent
from dsh.core.llm import GenerateOptions
from dsh.core.session import CompletedReason
from dsh.kernel import Context
from tests.core.agent.helpers import FakeAgent

OPTIONS = GenerateOptions(model="m", messages=[])


async def keep() -> GenerateOptions:
    return OPTIONS


def agents() -> tuple[Agent, Agent]:
    return cast(Agent, FakeAgent("main")), cast(Agent, FakeAgent("other"))


def test_a_stored_session_is_named_at_once() -> None:
    said: list[str] = []
    main, _ = agents()
    announce_session(Context(), main, said.append, new=False)
    assert said == ["session main-session"]


async def test_a_new_session_is_named_at_its_first_request_once_and_only_for_its_own_agent() -> None:
    root = Context()
    said: list[str] = []
    main, other = agents()
    announce_session(root, main, said.append, new=True)
    assert said == []
    assert await root.waterfall(AGENT_REQUEST, other, 1, 1, OPTIONS, inner=keep) is OPTIONS
    root.emit(AGENT_TURN_END, other, 1, CompletedReason())
    assert said == []
    assert await root.waterfall(AGENT_REQUEST, main, 1, 1, OPTIONS, inner=keep) is OPTIONS
    await root.waterfall(AGENT_REQUEST, main, 1, 2, OPTIONS, inner=keep)
    root.emit(AGENT_TURN_END, main, 1, CompletedReason())
    assert said == ["session main-session"]


def test_a_turn_that_made_no_request_names_it_at_its_end() -> None:
    root = Context()
    said: list[str] = []
    main, _ = agents()
    announce_session(root, main, said.append, new=True)
    root.emit(AGENT_TURN_END, main, 1, CompletedReason())
    root.emit(AGENT_TURN_END, main, 2, CompletedReason())
    assert said == ["session main-session"]
