"""SPEC §14.11 — ``packages/acp/tests/load.spec.ts`` (describe ``acp bridge — session/load replay``)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from dsh.core.llm import UNSET, UserSource, text
from dsh.core.persistence import LoadedSession
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
from dsh.core.tools import TOOLS, ToolDefinition
from dsh.kernel import unwrap
from dsh.testing.scripted import text_response, tool_call_response
from tests.acp.client import RpcResponseError, message_text
from tests.acp.events import shell_present_call, shell_present_result
from tests.acp.helpers import CWD, MOCK_MODEL_OPTIONS, BridgeStack, bridge_stack

TRIGGER = MessageTrigger(source=UserSource())


async def persist_turn(tmp_path: Path, text: str, answer: str, cwd: str = CWD) -> str:
    """Run one prompt through a first bridge stack and dispose it (the log is then on disk)."""
    async with bridge_stack(tmp_path, [text_response(answer)]) as stack:
        await stack.client.initialize()
        session_id = await stack.client.new_session(cwd)
        assert await stack.client.prompt(session_id, text) == {"stopReason": "end_turn"}
    return session_id


async def store_session(stack: BridgeStack, session_id: str, cwd: str | None) -> None:
    """Write a two-event session straight through the persistence service."""
    header = SessionHeader(version=1, id=session_id, created_at=1, cwd=UNSET if cwd is None else cwd)
    events: list[SessionEvent] = [
        TurnStartEvent(seq=0, time=0, data=TurnStartData(turn=1, trigger=TRIGGER)),
        TurnEndEvent(seq=1, time=0, data=TurnEndData(turn=1, reason=CompletedReason())),
    ]
    await stack.persistence.create(header)
    await stack.persistence.append(session_id, events)


async def test_replays_a_persisted_turn_from_the_event_log_as_session_update_on_load(tmp_path: Path) -> None:
    """replays a persisted turn from the event log as session/update on load"""
    session_id = await persist_turn(tmp_path, "remember this", "remembered answer")
    async with bridge_stack(tmp_path) as loader:
        await loader.client.initialize()
        assert await loader.client.load_session(session_id, CWD) == MOCK_MODEL_OPTIONS
        assert message_text(loader.updates) == "remembered answer"
        assert message_text(loader.updates, "user_message_chunk") == "remember this"
        # every replayed update precedes the load response
        last = loader.client.frames[-1]
        assert last == {"jsonrpc": "2.0", "id": 2, "result": MOCK_MODEL_OPTIONS}
        assert all(sid == session_id for sid, _ in loader.client.session_updates)
        agent = loader.agent(session_id)
        assert agent.session.header.cwd == CWD
        assert loader.bridge.session_ids == [session_id]


async def test_a_loaded_session_keeps_serving_prompts(tmp_path: Path) -> None:
    """(extra) after a load, live prompts continue the persisted conversation"""
    session_id = await persist_turn(tmp_path, "remember this", "remembered answer")
    async with bridge_stack(tmp_path, [text_response("still here")]) as loader:
        await loader.client.initialize()
        await loader.client.load_session(session_id, CWD)
        before = len(loader.updates)
        assert await loader.client.prompt(session_id, "again") == {"stopReason": "end_turn"}
        assert message_text(loader.updates[before:]) == "still here"
        turns = [e.data.turn for e in loader.agent(session_id).session.events if type(e) is TurnStartEvent]
        assert turns == [1, 2]


def _register_shell(stack: BridgeStack) -> None:
    async def run(args: Any, execution: Any) -> Any:
        return [text("hello\n")]

    stack.ctx[TOOLS].register(
        ToolDefinition(
            name="shell",
            description="d",
            parameters={"type": "object", "properties": {}},
            execute=run,
            present_call=shell_present_call,
            present_result=shell_present_result,
        )
    )


async def test_replays_a_persisted_tool_call_with_the_tool_owned_presentation_inline_tool(tmp_path: Path) -> None:
    """(extra, no bash needed) replay uses the tool's own presentation through the registry"""
    script = [
        tool_call_response("c1", "shell", {"command": "echo hello", "description": "Say hello"}),
        text_response("ok"),
    ]
    async with bridge_stack(tmp_path, script) as live:
        _register_shell(live)
        session_id = await live.session()
        await live.client.prompt(session_id, "run")
    async with bridge_stack(tmp_path) as loader:
        _register_shell(loader)
        await loader.client.initialize(terminal_output=True)
        await loader.client.load_session(session_id, CWD)
        call, result = [u for u in loader.updates if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
        assert (call["title"], call["rawInput"], call["kind"]) == (
            "echo hello",
            "echo hello",
            "execute",
        )
        assert call["_meta"] == {"terminal_info": {"terminal_id": "c1", "cwd": CWD}}
        assert result["_meta"]["terminal_output"] == {"terminal_id": "c1", "data": "hello\n"}


async def test_replays_a_persisted_tool_call_with_the_tool_owned_presentation(tmp_path: Path) -> None:
    """replays a persisted tool call with the TOOL-OWNED presentation (title/rawInput/console output)"""
    script = [
        tool_call_response("c1", "bash", {"command": "echo hello", "description": "Say hello"}),
        text_response("ok"),
    ]
    async with bridge_stack(tmp_path, script, bash=True) as live:
        session_id = await live.session(cwd=str(tmp_path))
        await live.client.prompt(session_id, "run")
    async with bridge_stack(tmp_path, bash=True) as loader:
        await loader.client.initialize()
        await loader.client.load_session(session_id, str(tmp_path))
        call, result = [u for u in loader.updates if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
        assert (call["title"], call["rawInput"], call["kind"]) == (
            "echo hello",
            {"command": "echo hello", "description": "Say hello"},
            "execute",
        )
        assert call["content"] == [{"type": "content", "content": {"type": "text", "text": "Say hello"}}]
        assert result["content"] == [{"type": "content", "content": {"type": "text", "text": "```console\nhello\n```"}}]


async def test_replays_a_persisted_bash_call_as_a_terminal_card_when_the_loader_advertises_the_capability(
    tmp_path: Path,
) -> None:
    """replays a persisted bash call as a TERMINAL card when the loader advertises the capability"""
    script = [tool_call_response("c1", "bash", {"command": "echo hi", "description": "Say hi"}), text_response("ok")]
    async with bridge_stack(tmp_path, script, bash=True) as live:
        session_id = await live.session(cwd=str(tmp_path))
        await live.client.prompt(session_id, "run")
    async with bridge_stack(tmp_path, bash=True) as loader:
        await loader.client.initialize(terminal_output=True)
        await loader.client.load_session(session_id, str(tmp_path))
        call, result = [u for u in loader.updates if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
        assert {"type": "terminal", "terminalId": "c1"} in call["content"]
        assert call["_meta"]["terminal_info"]["cwd"] == str(tmp_path)
        assert "content" not in result
        assert result["_meta"]["terminal_output"] == {"terminal_id": "c1", "data": "hi\n"}
        assert result["_meta"]["terminal_exit"] == {"terminal_id": "c1", "exit_code": 0}


async def test_a_load_whose_resume_finishes_after_a_client_disconnect_leaks_no_live_session(tmp_path: Path) -> None:
    """a load whose resume finishes after a client disconnect leaks no live session"""
    session_id = await persist_turn(tmp_path, "hi", "x")
    async with bridge_stack(tmp_path) as loader:
        await loader.client.initialize()
        service = unwrap(loader.persistence)
        real_load = service.load
        entered = asyncio.Event()
        gate = asyncio.Event()

        async def gated_load(loaded_id: str) -> LoadedSession:
            entered.set()
            await gate.wait()
            return await real_load(loaded_id)

        service.load = gated_load  # type: ignore[method-assign, assignment]
        pending = loader.client.send("session/load", {"sessionId": session_id, "cwd": CWD, "mcpServers": []})
        await entered.wait()
        loader.client.close()  # the editor goes away while resume() waits on storage
        await loader.bridge.quiesce()  # the teardown the disconnect runs (memoized)
        gate.set()  # resume() finishes AFTER the teardown
        frame = await pending
        assert frame["error"] == {"code": -32602, "message": "Invalid params: connection closed during session/load"}
        assert loader.agents.get(session_id) is None
        assert loader.bridge.session_ids == []


async def test_rejects_load_when_the_requested_cwd_does_not_match_the_persisted_session_cwd(tmp_path: Path) -> None:
    """rejects load when the requested cwd does not match the persisted session cwd"""
    other = str(tmp_path / "other")
    async with bridge_stack(tmp_path) as loader:
        await store_session(loader, "elsewhere", other)
        await loader.client.initialize()
        with pytest.raises(RpcResponseError) as caught:
            await loader.client.load_session("elsewhere", CWD)
        assert caught.value.error == {
            "code": -32602,
            "message": f"Invalid params: session elsewhere cwd mismatch: persisted {other}, requested {CWD}",
        }
        assert loader.agents.get("elsewhere") is None
        assert await loader.client.load_session("elsewhere", f"{other}/.") == MOCK_MODEL_OPTIONS
        assert loader.agent("elsewhere").session.header.cwd == other
        # the metadata lookup finds the right header among several stored sessions
        await store_session(loader, "zz-later", other)  # listed after "elsewhere"
        assert await loader.client.load_session("zz-later", other) == MOCK_MODEL_OPTIONS
        assert sorted(loader.bridge.session_ids) == ["elsewhere", "zz-later"]


async def test_rejects_load_for_a_non_absolute_cwd_still_required_to_be_absolute(tmp_path: Path) -> None:
    """rejects load for a non-absolute cwd (still required to be absolute)"""
    async with bridge_stack(tmp_path) as loader:
        await loader.client.initialize()
        with pytest.raises(RpcResponseError) as caught:
            await loader.client.load_session("s", "rel")
        assert caught.value.error == {"code": -32602, "message": "Invalid params: cwd must be an absolute path: rel"}
        for extra, message in (
            ({"additionalDirectories": ["/x"]}, "additionalDirectories"),
            ({"mcpServers": [{"name": "m"}]}, "mcpServers"),
        ):
            params = {"sessionId": "s", "cwd": CWD, "mcpServers": [], **extra}
            with pytest.raises(RpcResponseError, match=message):
                await loader.client.request("session/load", params)


async def test_a_load_of_an_id_that_is_neither_live_nor_stored_is_an_invalid_params_error(tmp_path: Path) -> None:
    """(issue) session/load of an unknown id is -32602 unknown session, and nothing is created"""
    async with bridge_stack(tmp_path) as loader:
        await loader.client.initialize()
        with pytest.raises(RpcResponseError) as caught:
            await loader.client.load_session("never-stored", CWD)
        assert caught.value.error == {"code": -32602, "message": "Invalid params: unknown session: never-stored"}
        assert loader.agents.list() == []
        assert loader.bridge.session_ids == []


async def test_a_stored_session_the_metadata_listing_misses_still_loads(tmp_path: Path) -> None:
    """(extra) when the header listing misses an id that persistence holds, the load goes on to resume it"""
    stored = await persist_turn(tmp_path, "hi", "one")
    async with bridge_stack(tmp_path) as loader:
        await loader.client.initialize()
        service = unwrap(loader.persistence)

        async def no_headers() -> Any:
            return []

        service.list = no_headers  # type: ignore[method-assign]
        assert await loader.client.load_session(stored, CWD) == MOCK_MODEL_OPTIONS
        assert loader.bridge.session_ids == [stored]


async def test_rejects_loading_a_persisted_session_that_has_no_cwd(tmp_path: Path) -> None:
    """rejects loading a persisted session that has NO cwd (would silently run in the launch dir)"""
    async with bridge_stack(tmp_path) as loader:
        await store_session(loader, "legacy", None)
        await loader.client.initialize()
        expected = {
            "code": -32602,
            "message": "Invalid params: session legacy has no absolute persisted cwd; cannot determine its workspace "
            "(it predates per-session cwd, or was created without one)",
        }
        for _ in range(2):  # rejected before resume: the id is not wedged
            with pytest.raises(RpcResponseError) as caught:
                await loader.client.load_session("legacy", CWD)
            assert caught.value.error == expected
            assert loader.agents.get("legacy") is None


async def test_allows_loading_alongside_an_existing_session_and_re_loading_a_live_one_replays_it(
    tmp_path: Path,
) -> None:
    """(issue) loading beside live sessions works; re-loading a live id (an editor reopening a thread) replays it"""
    stored = await persist_turn(tmp_path, "hi", "one")
    async with bridge_stack(tmp_path, [text_response("two")]) as live:
        session_id = await live.session()
        await live.client.prompt(session_id, "hi")
        other = await live.client.new_session(CWD)
        assert other != session_id
        assert await live.client.load_session(stored, CWD) == MOCK_MODEL_OPTIONS
        assert sorted(live.bridge.session_ids) == sorted([session_id, other, stored])
        agent = live.agent(session_id)
        for already in (session_id, stored):
            before = len(live.client.session_updates)
            assert await live.client.load_session(already, CWD) == MOCK_MODEL_OPTIONS
            replayed = [update for _, update in live.client.session_updates[before:]]
            assert {sid for sid, _ in live.client.session_updates[before:]} == {already}
            assert replayed[0] == {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}}
            text = "".join(u["content"]["text"] for u in replayed if u["sessionUpdate"] == "agent_message_chunk")
            assert text == ("two" if already == session_id else "one")
        assert live.agent(session_id) is agent  # the live agent is kept, not resumed a second time
        assert sorted(live.bridge.session_ids) == sorted([session_id, other, stored])
        with pytest.raises(RpcResponseError) as caught:
            await live.client.load_session(session_id, "/elsewhere")
        assert caught.value.code == -32602
        assert "cwd mismatch" in caught.value.message


async def test_a_load_of_an_id_that_is_still_loading_is_rejected(tmp_path: Path) -> None:
    """(extra) a second load of an id whose first load is in progress is refused"""
    session_id = await persist_turn(tmp_path, "hi", "x")
    async with bridge_stack(tmp_path) as loader:
        await loader.client.initialize()
        service = unwrap(loader.persistence)
        real_list = service.list
        entered = asyncio.Event()
        gate = asyncio.Event()

        async def gated_list() -> Any:
            entered.set()
            await gate.wait()
            return await real_list()

        service.list = gated_list  # type: ignore[method-assign]
        first = loader.client.send("session/load", {"sessionId": session_id, "cwd": CWD, "mcpServers": []})
        await entered.wait()
        with pytest.raises(RpcResponseError, match="already loaded"):
            await loader.client.load_session(session_id, CWD)
        gate.set()
        assert (await first)["result"] == MOCK_MODEL_OPTIONS
