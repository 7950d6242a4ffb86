"""SPEC §14.10 — ``packages/acp/tests/edges.spec.ts`` (describe ``acp bridge — demux & config edges``)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from dsh.acp import LineTransport, MemoryTransport
from dsh.core.llm import TextDeltaChunk, UserSource, text
from dsh.core.session import (
    SESSION_EVENT,
    AssistantChunkData,
    AssistantChunkEvent,
    CompletedReason,
    MessageTrigger,
    Session,
    StepData,
    StepEndEvent,
    StepStartEvent,
    TurnEndData,
    TurnEndEvent,
    TurnStartData,
    TurnStartEvent,
)
from dsh.testing.scripted import HANG, text_response
from tests.acp.client import RpcResponseError, message_text, result_of
from tests.acp.helpers import CWD, bridge_stack, saw_chunk


async def test_ignores_events_from_an_agent_the_bridge_does_not_own_strict_id_demux(tmp_path: Path) -> None:
    """ignores events from an agent the bridge does not own (strict id demux)"""
    async with bridge_stack(tmp_path, [text_response("outside"), HANG]) as stack:
        session_id = await stack.session()
        outside = stack.harness.agent("outside")
        outside.send([text("hi")])
        await outside.when_idle()
        assert stack.updates == []
        prompt = stack.client.prompt_future(session_id, "go")
        await stack.client.wait_for(saw_chunk())
        # a session object that merely carries a bridge session's id is not that session
        impostor = Session(session_id)
        impostor.on_append = lambda session, event: stack.ctx.emit(SESSION_EVENT, session, event)
        impostor.append(TurnStartEvent, TurnStartData(turn=1, trigger=MessageTrigger(source=UserSource())))
        impostor.append(StepStartEvent, StepData(turn=1, step=1))
        delta = TextDeltaChunk(index=0, text="impostor")
        impostor.append(AssistantChunkEvent, AssistantChunkData(turn=1, step=1, chunk=delta))
        impostor.append(StepEndEvent, StepData(turn=1, step=1))
        impostor.append(TurnEndEvent, TurnEndData(turn=1, reason=CompletedReason()))
        assert message_text(stack.updates) == "partial"
        assert not prompt.done()
        stack.client.cancel(session_id)
        assert result_of(await prompt) == {"stopReason": "cancelled"}


class RefusingUpdates:
    """A server transport whose ``session/update`` writes fail (the client side rejected them)."""

    def __init__(self, inner: MemoryTransport) -> None:
        self.inner = inner
        self.refused = 0

    async def read_line(self) -> str | None:
        return await self.inner.read_line()

    def write_line(self, line: str) -> None:
        if '"method":"session/update"' in line:
            self.refused += 1
            raise ConnectionError("client rejected the update")
        self.inner.write_line(line)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_survives_a_session_update_that_the_client_rejects_best_effort_notify(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """survives a session/update that the client rejects (best-effort notify)"""
    refusing: list[RefusingUpdates] = []

    def wrap(inner: MemoryTransport) -> LineTransport:
        refusing.append(RefusingUpdates(inner))
        return refusing[0]

    async with bridge_stack(tmp_path, [text_response("ok"), text_response("fine")], server_transport=wrap) as stack:
        session_id = await stack.session()
        with caplog.at_level(logging.WARNING):
            assert await stack.client.prompt(session_id, "go") == {"stopReason": "end_turn"}
        assert refusing[0].refused == 2
        assert "acp: session/update failed: could not send session/update: client rejected the update" in caplog.text
        assert stack.updates == []

        def client_side_failure(update: dict[str, Any]) -> None:
            raise RuntimeError("the editor choked on an update")

        stack.client.on_update = client_side_failure
        assert await stack.client.prompt(session_id, "again") == {"stopReason": "end_turn"}


async def test_survives_an_update_handler_that_fails_in_the_client(tmp_path: Path) -> None:
    """(extra) a client whose update handler raises still gets the prompt's answer"""
    async with bridge_stack(tmp_path, [text_response("ok")]) as stack:
        session_id = await stack.session()

        def choke(update: dict[str, Any]) -> None:
            raise RuntimeError("the editor choked on an update")

        stack.client.on_update = choke
        assert await stack.client.prompt(session_id, "go") == {"stopReason": "end_turn"}
        assert message_text(stack.updates) == "ok"


async def test_accepts_session_new_with_additional_directories_empty(tmp_path: Path) -> None:
    """accepts session/new with additionalDirectories empty"""
    async with bridge_stack(tmp_path) as stack:
        await stack.client.initialize()
        session_id = await stack.client.new_session(CWD, additionalDirectories=[])
        assert stack.agent(session_id).session.header.cwd == CWD


async def test_rejects_non_empty_mcp_servers_without_the_mcp_plugin(tmp_path: Path) -> None:
    """rejects non-empty mcpServers when no MCP host is loaded, naming the plugin to add"""
    async with bridge_stack(tmp_path) as stack:
        await stack.client.initialize()
        server = {"name": "fs", "command": "/bin/mcp-fs", "args": [], "env": []}
        with pytest.raises(RpcResponseError) as caught:
            await stack.client.request("session/new", {"cwd": CWD, "mcpServers": [server]})
        assert caught.value.error == {
            "code": -32602,
            "message": "Invalid params: mcpServers needs the mcp plugin: add `- {id: mcp, name: mcp}` to the plugin tree",
        }
        assert stack.agents.list() == []
