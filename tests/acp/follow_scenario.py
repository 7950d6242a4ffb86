"""The ACP follow scenario shared by every backend: `session/load` of a session a running `dsh run` writes.

The writer is a real `dsh run` against the wire test server whose scripted model says
"Waiting." and calls `bash` with a command that waits for a file the test creates, so
its turn stays open until the test lets it go. The follower is a real `dsh acp` driven
by the official SDK client over stdio: it loads the session while the writer runs,
gets the stored log replayed, is refused a prompt naming the writer's pid, then sees
the rest of the writer's turn live. Once the writer has ended (it finished, or it was
killed), a prompt takes the session over and runs; the stored log stays balanced.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import acp
from dsh.acp.following import SESSION_FOLLOWED
from dsh.testing.wire import Finish, Reply, TextDelta, WireServer, text_reply, tool_call
from tests.acp.sdk import Recorder, environment, spawn
from tests.cli.helpers import child_env, dsh

WAIT_S = 30.0

SHOWN = ("user_message_chunk", "agent_message_chunk", "tool_call", "tool_call_update")


def shown(recorder: Recorder, session_id: str, start: int = 0) -> list[tuple[str, str]]:
    """The session's message and tool updates from ``start`` on, as (kind, text or call id and status)."""
    rows: list[tuple[str, str]] = []
    for sid, update in recorder.updates[start:]:
        kind = update["sessionUpdate"]
        if sid != session_id or kind not in SHOWN:
            continue
        if kind.startswith("tool_call"):
            rows.append((kind, f"{update['toolCallId']} {update['status']}"))
        else:
            rows.append((kind, update["content"]["text"]))
    return rows


async def until(predicate: Callable[[], bool]) -> None:
    async def poll() -> None:
        while not predicate():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), WAIT_S)


async def _start_writer(store: list[str], tmp_path: Path, base_url: str) -> tuple[asyncio.subprocess.Process, str]:
    """`dsh run` of the waiting prompt; returns it and its session id once it announced it."""
    writer = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "dsh.cli",
        *store,
        "--model",
        "deepseek-v4-flash",
        "run",
        "--cwd",
        str(tmp_path),
        "wait for it",
        env=environment(base_url),
        cwd=tmp_path,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert writer.stderr is not None
    while True:
        line = (await asyncio.wait_for(writer.stderr.readline(), WAIT_S)).decode()
        assert line, "the writer ended before it announced its session"
        if line.startswith("dsh: session "):
            return writer, line.removeprefix("dsh: session ").strip()


async def stored_log(store: list[str], tmp_path: Path, session_id: str) -> list[dict[str, Any]]:
    """The session's stored events, read by `dsh sessions show --json`."""
    env = child_env(home=tmp_path / "home")
    printed = await dsh(*store, "sessions", "show", "--json", session_id, env=env, cwd=tmp_path)
    assert printed.status == 0, printed.stderr
    return printed.json_lines()[1:]


def assert_balanced(events: list[dict[str, Any]], turns: int) -> None:
    """Seq contiguous from 0, one ``turn/end`` per ``turn/start``, ``turns`` turns, each call answered once."""
    assert [event["seq"] for event in events] == list(range(len(events)))
    starts = [event["data"]["turn"] for event in events if event["type"] == "turn/start"]
    ends = [event["data"]["turn"] for event in events if event["type"] == "turn/end"]
    assert starts == ends == list(range(1, turns + 1))
    calls = [event["data"]["callId"] for event in events if event["type"] == "tool/call"]
    results = [event["data"]["callId"] for event in events if event["type"] == "tool/result"]
    assert sorted(calls) == sorted(results)


async def follow_then_take_over(tmp_path: Path, store: list[str], *, kill: bool = False) -> None:
    """Run the scenario on ``store`` (``--sessions-root DIR`` or ``--store URL``); ``kill``: SIGKILL the writer."""
    running, go = tmp_path / "running", tmp_path / "go"
    command = f"touch {running}; while [ ! -e {go} ]; do sleep 0.02; done; echo let go"
    arguments = json.dumps({"command": command, "description": "wait"})
    script = [
        Reply([TextDelta("Waiting."), *tool_call(0, "call-1", "bash", arguments), Finish("tool_calls")]),
        *([] if kill else [text_reply("finished")]),
        text_reply("taken over"),
    ]
    recorder = Recorder()
    async with WireServer(script) as wire:
        writer, session_id = await _start_writer(store, tmp_path, wire.base_url)
        try:
            await until(running.exists)
            async with spawn(recorder, tmp_path, wire.base_url, *store) as (conn, _process):
                await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
                loaded = await conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
                assert loaded.field_meta is not None
                assert "in use by another dsh process" in loaded.field_meta["following"]["writer"]
                answered = len(recorder.updates)
                assert shown(recorder, session_id)[:2] == [
                    ("user_message_chunk", "wait for it"),
                    ("agent_message_chunk", "Waiting."),
                ]
                with pytest.raises(acp.RequestError) as refused:
                    await conn.prompt(session_id=session_id, prompt=[acp.text_block("me too")])
                assert refused.value.code == SESSION_FOLLOWED
                assert "followed read-only" in str(refused.value)
                assert f"pid {writer.pid}" in str(refused.value)  # the holder (PostgreSQL adds its host)
                await conn.cancel(session_id=session_id)  # a no-op for the remote turn
                assert writer.returncode is None, "the writer ended before the follower was refused"
                if kill:
                    writer.send_signal(signal.SIGKILL)
                    assert await asyncio.wait_for(writer.wait(), WAIT_S) == -signal.SIGKILL
                else:
                    go.touch()
                    await until(lambda: ("agent_message_chunk", "finished") in shown(recorder, session_id))
                    assert await asyncio.wait_for(writer.wait(), WAIT_S) == 0
                    assert shown(recorder, session_id) == [
                        ("user_message_chunk", "wait for it"),
                        ("agent_message_chunk", "Waiting."),
                        ("tool_call", "call-1 in_progress"),
                        ("tool_call_update", "call-1 completed"),
                        ("agent_message_chunk", "finished"),
                    ]
                    assert ("agent_message_chunk", "finished") in shown(recorder, session_id, answered)  # live
                before = len(recorder.updates)
                done = await conn.prompt(session_id=session_id, prompt=[acp.text_block("take over")])
                assert done.stop_reason == "end_turn"
                after = shown(recorder, session_id, before)
                if kill:  # the takeover's repair closes the killed turn first
                    assert after == [("tool_call_update", "call-1 failed"), ("agent_message_chunk", "taken over")]
                else:
                    assert after == [("agent_message_chunk", "taken over")]
        finally:
            go.touch()  # lets a waiting command of a killed writer go
            if writer.returncode is None:
                writer.kill()
            await writer.wait()
    events = await stored_log(store, tmp_path, session_id)
    assert_balanced(events, turns=2)
    ends = [event["data"]["reason"]["kind"] for event in events if event["type"] == "turn/end"]
    assert ends == (["interrupted", "completed"] if kill else ["completed", "completed"])
