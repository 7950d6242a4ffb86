"""ACP ``session/list``: stored and live sessions, newest first, cwd-filtered, paged, titled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp.schema import ListSessionsRequest, ListSessionsResponse

from dsh.acp.listing import PAGE_SIZE, encode_cursor
from dsh.core.llm import UNSET, UserSource
from dsh.core.session import (
    CompletedReason,
    MessageTrigger,
    SessionEvent,
    SessionHeader,
    TurnEndData,
    TurnEndEvent,
    TurnStartData,
    TurnStartEvent,
)
from dsh.testing.scripted import text_response
from tests.acp.client import RpcResponseError
from tests.acp.helpers import CWD, BridgeStack, bridge_stack

TRIGGER = MessageTrigger(source=UserSource())
OTHER = "/elsewhere/project"


async def store(stack: BridgeStack, session_id: str, created_at: int, cwd: str | None = CWD) -> None:
    """A one-turn session written straight through the persistence service."""
    header = SessionHeader(version=1, id=session_id, created_at=created_at, cwd=UNSET if cwd is None else cwd)
    events: list[SessionEvent] = [
        TurnStartEvent(seq=0, time=0, data=TurnStartData(turn=1, trigger=TRIGGER)),
        TurnEndEvent(seq=1, time=0, data=TurnEndData(turn=1, reason=CompletedReason())),
    ]
    await stack.persistence.create(header)
    await stack.persistence.append(session_id, events)


async def list_sessions(stack: BridgeStack, **params: Any) -> dict[str, Any]:
    """Send ``session/list`` (params checked against the SDK schema) and check the answer against it."""
    ListSessionsRequest.model_validate(params)
    result: dict[str, Any] = await stack.client.request("session/list", params)
    ListSessionsResponse.model_validate(result)
    return result


async def test_lists_live_and_stored_sessions_newest_first_with_titles(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path, [text_response("hi")]) as stack:
        await stack.client.initialize()
        await store(stack, "stored-old", 1)
        await store(stack, "stored-other", 2, cwd=OTHER)
        await store(stack, "no-workspace", 3, cwd=None)
        prompted = await stack.client.new_session(CWD)
        assert await stack.client.prompt(prompted, "  fix the\n  failing   test ") == {"stopReason": "end_turn"}
        fresh = await stack.client.new_session(CWD)  # not stored yet: listed from this connection
        result = await list_sessions(stack)
        sessions = result["sessions"]
        assert "nextCursor" not in result
        by_id = {s["sessionId"]: s for s in sessions}
        assert by_id[prompted] == {"sessionId": prompted, "cwd": CWD, "title": "fix the failing test"}
        assert by_id[fresh] == {"sessionId": fresh, "cwd": CWD}
        assert by_id["stored-other"] == {"sessionId": "stored-other", "cwd": OTHER}
        assert "no-workspace" not in by_id  # ACP requires a cwd
        assert [s["sessionId"] for s in sessions][-2:] == ["stored-other", "stored-old"]

        filtered = await list_sessions(stack, cwd=OTHER)
        assert filtered == {"sessions": [{"sessionId": "stored-other", "cwd": OTHER}]}
        assert await list_sessions(stack, cwd="/nowhere") == {"sessions": []}


async def test_pages_with_an_opaque_cursor(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path) as stack:
        await stack.client.initialize()
        for index in range(PAGE_SIZE + 1):
            await store(stack, f"s{index:03}", index)
        first = await list_sessions(stack, cwd=CWD)
        ids = [s["sessionId"] for s in first["sessions"]]
        assert ids == [f"s{index:03}" for index in range(PAGE_SIZE, 0, -1)]
        assert first["nextCursor"] == encode_cursor("s001")
        await store(stack, "newer", 1000)  # a session stored meanwhile does not shift the next page
        second = await list_sessions(stack, cwd=CWD, cursor=first["nextCursor"])
        assert second == {"sessions": [{"sessionId": "s000", "cwd": CWD}]}


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"cursor": "bm90LWEtc2Vzc2lvbg=="}, "unknown cursor: bm90LWEtc2Vzc2lvbg==; start again without one"),
        ({"cursor": "%%%"}, "unknown cursor: %%%; start again without one"),
        ({"cwd": "relative/dir"}, "cwd must be an absolute path: relative/dir"),
    ],
)
async def test_bad_cursor_or_cwd_is_invalid_params(tmp_path: Path, params: dict[str, Any], message: str) -> None:
    async with bridge_stack(tmp_path) as stack:
        await stack.client.initialize()
        await store(stack, "one", 1)
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.request("session/list", params)
        assert caught.value.code == -32602
        assert caught.value.message == f"Invalid params: {message}"


async def test_mistyped_params_are_invalid_params(tmp_path: Path) -> None:
    async with bridge_stack(tmp_path) as stack:
        await stack.client.initialize()
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.request("session/list", {"cwd": 5})
        assert caught.value.code == -32602
        assert caught.value.has_data
