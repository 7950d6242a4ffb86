"""(issue acceptance) Approvals and modes over a real ACP client: the official SDK client drives ``dsh acp``.

``dsh acp`` runs as a subprocess on its built-in profile (which loads the permissions
and plan-mode plugins), the DeepSeek adapter pointed at the local wire server,
which plays a model writing files with the real ``write`` tool. The client answers
``session/request_permission`` as a user would: allow once, allow always (the
second call is not asked), reject (the model reads the rejection), and a question
left open while the turn is cancelled. Modes: ``session/new`` lists them,
``session/set_mode plan`` makes a write refused without a question, and an approved
``exit_plan_mode`` leaves plan mode with a ``current_mode_update``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any, cast

import pytest
from acp.schema import (
    AllowedOutcome,
    CurrentModeUpdate,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallStart,
    ToolCallUpdate,
)

import acp
from dsh.testing.wire import Finish as WireFinish
from dsh.testing.wire import Reply, WireServer, text_reply, tool_call

pytestmark = pytest.mark.e2e

MODEL = "deepseek-v4-flash"


class Editor:
    """An ACP client playing the user: ``answers`` are option ids, ``"cancelled"``, or ``"hold"``
    (keep the question open until :meth:`release`)."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, ToolCallUpdate, list[PermissionOption]]] = []
        self.updates: list[Any] = []
        self.held = asyncio.Event()
        self.released = asyncio.Event()
        self._changed = asyncio.Event()

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.asked.append((session_id, tool_call, options))
        answer = self.answers.pop(0)
        if answer == "hold":
            self.held.set()
            await self.released.wait()
            answer = "allow-once"  # too late: the turn was cancelled meanwhile
        if answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)
        self._changed.set()

    async def wait_for(self, ready: Any) -> None:
        while not ready():
            self._changed.clear()
            await self._changed.wait()

    def modes(self) -> list[str]:
        return [u.current_mode_id for u in self.updates if isinstance(u, CurrentModeUpdate)]

    def cards(self) -> list[ToolCallStart]:
        return [u for u in self.updates if isinstance(u, ToolCallStart)]


def write_reply(call_id: str, path: Path, content: str) -> Reply:
    arguments = json.dumps({"file_path": str(path), "content": content})
    return Reply([*tool_call(0, call_id, "write", arguments), WireFinish("tool_calls")])


def tool_messages(wire: WireServer) -> list[str]:
    """The text of every tool result the model was sent, in order (each request's new ones)."""
    seen: list[str] = []
    for request in wire.requests:
        for message in request.json["messages"]:
            if message["role"] == "tool" and message["content"] not in seen:
                seen.append(message["content"])
    return seen


async def run_editor(tmp_path: Path, wire: WireServer, editor: Editor, body: Any) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "DEEPSEEK_API_KEY": "dummy",
        "DEEPSEEK_BASE_URL": wire.base_url,
        "DSH_HOME": str(tmp_path / "home"),
    }
    env = {key: value for key, value in env.items() if not key.startswith("DSH_SNAPSHOT")}
    command = ["-m", "dsh.cli", "--sessions-root", str(tmp_path / "sessions"), "--model", MODEL, "acp"]
    async with acp.spawn_agent_process(cast(acp.Client, editor), sys.executable, *command, env=env, cwd=workspace) as (
        conn,
        process,
    ):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        await body(conn, workspace)
        process.terminate()
        assert await process.wait() == 0


async def test_allow_once_allow_always_and_reject_over_the_sdk_client(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)  # the SDK logs a frame that fails its schema as an error
    workspace = tmp_path / "workspace"
    script = [
        write_reply("call_once", workspace / "once.txt", "1"),
        text_reply("wrote once"),
        write_reply("call_rejected", workspace / "rejected.txt", "2"),
        text_reply("understood"),
        write_reply("call_always", workspace / "always.txt", "3"),
        text_reply("wrote always"),
        write_reply("call_granted", workspace / "granted.txt", "4"),
        text_reply("wrote granted"),
    ]
    editor = Editor(["allow-once", "reject-once", "allow-always"])

    async def body(conn: acp.ClientSideConnection, cwd: Path) -> None:
        session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        assert session.modes is not None
        assert session.modes.current_mode_id == "ask"
        await conn.set_session_mode(session_id=session.session_id, mode_id="read-only")  # writes are asked
        await editor.wait_for(lambda: editor.modes() == ["read-only"])
        for _ in range(4):
            done = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("write it")])
            assert done.stop_reason == "end_turn"

    async with WireServer(script) as wire:
        await run_editor(tmp_path, wire, editor, body)
    assert [call.tool_call_id for _, call, _ in editor.asked] == ["call_once", "call_rejected", "call_always"]
    assert [card.tool_call_id for card in editor.cards()] == [
        "call_once",
        "call_rejected",
        "call_always",
        "call_granted",
    ]
    _, first, options = editor.asked[0]
    assert first.kind == "edit"
    assert first.raw_input == {"file_path": str(workspace / "once.txt"), "content": "1"}
    assert [option.option_id for option in options] == ["allow-once", "allow-always", "reject-once"]
    assert [option.kind for option in options] == ["allow_once", "allow_always", "reject_once"]
    assert (workspace / "once.txt").read_text() == "1"
    assert not (workspace / "rejected.txt").exists()
    assert "reject" in tool_messages(wire)[1].lower()  # the model sees the rejection
    assert (workspace / "always.txt").read_text() == "3"
    assert (workspace / "granted.txt").read_text() == "4"  # granted by "always": not asked again


async def test_cancelling_the_turn_while_the_question_is_open(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR)
    workspace = tmp_path / "workspace"
    script = [write_reply("call_held", workspace / "held.txt", "x"), text_reply("after the cancel")]
    editor = Editor(["hold"])

    async def body(conn: acp.ClientSideConnection, cwd: Path) -> None:
        session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="read-only")
        prompt = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[acp.text_block("write it")]))
        await editor.held.wait()
        await conn.cancel(session_id=session.session_id)
        assert (await prompt).stop_reason == "cancelled"
        editor.released.set()  # the editor answers late: nobody waits for it any more
        done = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("and now?")])
        assert done.stop_reason == "end_turn"

    async with WireServer(script) as wire:
        await run_editor(tmp_path, wire, editor, body)
    assert not (workspace / "held.txt").exists()
    assert len(editor.asked) == 1


async def test_plan_mode_refuses_writes_and_an_approved_plan_leaves_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    workspace = tmp_path / "workspace"
    plan = "# Add notes.txt\n\n1. write notes.txt"
    script = [
        write_reply("call_write", workspace / "notes.txt", "too early"),
        Reply([*tool_call(0, "call_exit", "exit_plan_mode", json.dumps({"plan": plan})), WireFinish("tool_calls")]),
        write_reply("call_after", workspace / "notes.txt", "planned"),
        text_reply("done"),
    ]
    editor = Editor(["allow-once"])

    async def body(conn: acp.ClientSideConnection, cwd: Path) -> None:
        session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        assert session.modes is not None
        assert "plan" in [mode.id for mode in session.modes.available_modes]
        await conn.set_session_mode(session_id=session.session_id, mode_id="plan")
        done = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("plan, then do it")])
        assert done.stop_reason == "end_turn"

    async with WireServer(script) as wire:
        await run_editor(tmp_path, wire, editor, body)
    ((_, call, options),) = editor.asked  # only the plan was asked; the early write was refused outright
    assert call.tool_call_id == "call_exit"
    assert call.title == "Add notes.txt"
    assert call.content is not None
    assert [item.model_dump(mode="json")["content"]["text"] for item in call.content] == [plan]  # the plan is shown
    assert [option.option_id for option in options] == ["allow-once", "reject-once"]
    assert editor.modes() == ["plan", "ask"]  # set by the client, then left by the approved plan
    assert "plan mode" in tool_messages(wire)[0]
    assert (workspace / "notes.txt").read_text() == "planned"
