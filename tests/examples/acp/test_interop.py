"""Interop: the official ACP Python SDK client drives ``start.py`` over real pipes.

The agent runs the live tree (the real DeepSeek adapter over real HTTP) against the
local wire server. One client session: initialize, a new session, a prompt that runs
bash, a cancel in the middle of a stream followed at once by a prompt that completes;
then the process is stopped, a new one is started over the same sessions root, and
``session/load`` replays the history as updates. Every frame the agent sends must
validate against the SDK's schema (a frame that does not is logged by the SDK as an
error, which fails the test).

The ``acpx`` Node client variant runs when ``acpx`` is already installed (on PATH or in
the npx cache); the suite never downloads it, so it is skipped elsewhere.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from acp.schema import (
    AgentMessageChunk,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

import acp
from dsh.testing.wire import Finish as WireFinish
from dsh.testing.wire import Reply, TextDelta, WireServer, text_reply, tool_call
from tests.examples.acp.harness import START, child_env


class RecordingClient:
    """An ACP client that records every ``session/update`` and lets tests wait on them."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, Any]] = []
        self._changed = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))
        self._changed.set()

    async def wait_for(self, ready: Callable[[], bool]) -> None:
        while not ready():
            self._changed.clear()
            await self._changed.wait()

    def of(self, kind: type[Any]) -> list[Any]:
        return [update for _, update in self.updates if isinstance(update, kind)]


def as_client(client: RecordingClient) -> acp.Client:
    """The SDK calls only what the agent uses (``session/update``); the rest of its protocol is absent."""
    return cast(acp.Client, client)


def text_of(chunks: list[Any]) -> str:
    return "".join(chunk.content.text for chunk in chunks if isinstance(chunk.content, TextContentBlock))


def bash_reply(call_id: str, command: str) -> Reply:
    arguments = json.dumps({"command": command, "description": "Print the interop marker"})
    return Reply([*tool_call(0, call_id, "bash", arguments), WireFinish("tool_calls")])


async def stop(process: asyncio.subprocess.Process) -> None:
    process.terminate()
    assert await process.wait() == 0


async def test_the_sdk_client_drives_a_full_session_then_reloads_it_in_a_new_process(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """(issue acceptance) ACP SDK client over real pipes: bash turn, cancel then immediate prompt, restart, load"""
    caplog.set_level(logging.ERROR)
    workspace = (tmp_path / "workspace").resolve()
    workspace.mkdir()
    sessions = tmp_path / "sessions"
    script = [
        bash_reply("call_interop", "echo INTEROP_OK"),
        text_reply("marker printed"),
        Reply([TextDelta("partial answer")], ending="stall"),  # cancelled in the middle
        text_reply("after cancel"),
        text_reply("yes"),
    ]
    async with WireServer(script) as wire:
        env = child_env(
            {
                "DEEPSEEK_API_KEY": "dummy",
                "DEEPSEEK_BASE_URL": wire.base_url,
                "DSH_SNAPSHOT_SESSIONS_ROOT": str(sessions),
            },
            tmp_path,
        )
        first = RecordingClient()
        async with acp.spawn_agent_process(as_client(first), sys.executable, str(START), env=env, cwd=workspace) as (
            conn,
            proc,
        ):
            hello = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            assert hello.protocol_version == 1
            assert hello.agent_capabilities is not None
            assert hello.agent_capabilities.load_session is True
            session_id = (await conn.new_session(cwd=str(workspace))).session_id

            done = await conn.prompt(session_id=session_id, prompt=[acp.text_block("Print the interop marker.")])
            assert done.stop_reason == "end_turn"
            (start,) = first.of(ToolCallStart)
            assert (start.title, start.kind, start.status) == ("echo INTEROP_OK", "execute", "in_progress")
            (progress,) = first.of(ToolCallProgress)
            assert progress.tool_call_id == start.tool_call_id
            assert progress.status == "completed"
            assert "INTEROP_OK" in json.dumps(progress.model_dump(mode="json"))
            assert text_of(first.of(AgentMessageChunk)) == "marker printed"

            seen = len(first.of(AgentMessageChunk))
            streaming = asyncio.ensure_future(
                conn.prompt(session_id=session_id, prompt=[acp.text_block("Tell me a long story.")])
            )
            await first.wait_for(lambda: len(first.of(AgentMessageChunk)) > seen)
            await conn.cancel(session_id=session_id)
            assert (await streaming).stop_reason == "cancelled"
            after = await conn.prompt(session_id=session_id, prompt=[acp.text_block("Are you still there?")])
            assert after.stop_reason == "end_turn"
            assert text_of(first.of(AgentMessageChunk)).endswith("after cancel")
            assert all(sid == session_id for sid, _ in first.updates)
            await stop(proc)
        assert len(wire.requests) == 4

        second = RecordingClient()
        async with acp.spawn_agent_process(as_client(second), sys.executable, str(START), env=env, cwd=workspace) as (
            conn,
            proc,
        ):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            await conn.load_session(cwd=str(workspace), session_id=session_id)
            # every replayed update is sent before the load answer
            users = [chunk.content.text for chunk in second.of(UserMessageChunk)]
            assert users == ["Print the interop marker.", "Tell me a long story.", "Are you still there?"]
            assert [start.title for start in second.of(ToolCallStart)] == ["echo INTEROP_OK"]
            assert [update.status for update in second.of(ToolCallProgress)] == ["completed"]
            assert text_of(second.of(AgentMessageChunk)) == "marker printedpartial answerafter cancel"
            again = await conn.prompt(session_id=session_id, prompt=[acp.text_block("One more?")])
            assert again.stop_reason == "end_turn"
            await stop(proc)
        assert len(wire.requests) == 5
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR] == []


def find_acpx() -> str | None:
    """An already-installed ``acpx`` (on PATH or in the npx cache); never downloads one."""
    if shutil.which("node") is None:
        return None
    found = shutil.which("acpx")
    if found is not None:
        return found
    cached = sorted(Path.home().glob(".npm/_npx/*/node_modules/.bin/acpx"))
    return str(cached[-1]) if cached else None


@pytest.mark.skipif(find_acpx() is None, reason="acpx is not installed (npx acpx would need the npm registry)")
async def test_the_acpx_node_client_runs_a_bash_turn_through_the_agent(tmp_path: Path) -> None:
    """(issue acceptance) the acpx Node client drives start.py: initialize, session/new, a bash turn"""
    acpx = find_acpx()
    assert acpx is not None
    workspace = (tmp_path / "workspace").resolve()
    workspace.mkdir()
    (tmp_path / "home").mkdir()
    async with WireServer([bash_reply("call_acpx", "echo ACPX_OK"), text_reply("done via acpx")]) as wire:
        env = child_env(
            {
                "DEEPSEEK_API_KEY": "dummy",
                "DEEPSEEK_BASE_URL": wire.base_url,
                "DSH_SNAPSHOT_SESSIONS_ROOT": str(tmp_path / "sessions"),
                "HOME": str(tmp_path / "home"),  # acpx keeps its own state under HOME
            },
            tmp_path,
        )
        process = await asyncio.create_subprocess_exec(
            acpx,
            "--agent",
            f"{sys.executable} {START}",
            "--cwd",
            str(workspace),
            "--format",
            "json",
            "--approve-all",
            "exec",
            "Print the interop marker.",
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate()
    assert process.returncode == 0, err.decode(errors="replace")
    frames = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    updates = [frame["params"]["update"] for frame in frames if frame.get("method") == "session/update"]
    call = next(update for update in updates if update["sessionUpdate"] == "tool_call")
    assert (call["title"], call["kind"]) == ("echo ACPX_OK", "execute")
    result = next(update for update in updates if update["sessionUpdate"] == "tool_call_update")
    assert result["status"] == "completed"
    assert "ACPX_OK" in result["content"][0]["content"]["text"]
    assert {"stopReason": "end_turn"} in [frame.get("result") for frame in frames]
    assert len(wire.requests) == 2


def test_acpx_is_looked_up_locally_and_never_downloaded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """(port) acpx comes from PATH or the npx cache, and needs node; otherwise the variant is skipped"""
    monkeypatch.setattr(Path, "home", staticmethod(lambda: tmp_path))
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert find_acpx() is None  # no node
    monkeypatch.setattr(shutil, "which", lambda name: f"/bin/{name}")
    assert find_acpx() == "/bin/acpx"
    monkeypatch.setattr(shutil, "which", lambda name: "/bin/node" if name == "node" else None)
    assert find_acpx() is None
    cached = tmp_path / ".npm" / "_npx" / "abc" / "node_modules" / ".bin" / "acpx"
    cached.parent.mkdir(parents=True)
    cached.write_text("", encoding="utf-8")
    assert find_acpx() == str(cached)
