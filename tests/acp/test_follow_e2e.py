"""`session/load` over ACP of a session another `dsh` process is running (JSONL and SQLite), then its takeover."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import acp
from dsh.acp.following import SESSION_FOLLOWED
from dsh.testing.wire import Finish, Reply, TextDelta, WireServer, text_reply, tool_call
from tests.acp.follow_scenario import WAIT_S, assert_balanced, follow_then_take_over, shown, stored_log, until
from tests.acp.sdk import Recorder, spawn


async def test_a_jsonl_session_another_process_runs_is_followed_live_then_taken_over_when_it_ends(
    tmp_path: Path,
) -> None:
    await follow_then_take_over(tmp_path, ["--sessions-root", str(tmp_path / "sessions")])


async def test_a_sqlite_session_another_process_runs_is_followed_live_then_taken_over_when_it_ends(
    tmp_path: Path,
) -> None:
    await follow_then_take_over(tmp_path, ["--store", f"sqlite:///{tmp_path / 'sessions.db'}"])


async def test_a_followed_session_whose_writer_is_killed_is_repaired_and_taken_over_by_a_prompt(
    tmp_path: Path,
) -> None:
    await follow_then_take_over(tmp_path, ["--sessions-root", str(tmp_path / "sessions")], kill=True)


async def test_an_editor_follows_the_session_another_editor_runs_with_the_same_cards_it_sees(tmp_path: Path) -> None:
    """Two `dsh acp` servers on one store: B loads the session A is running, sees A's cards live, then takes over."""
    root = ["--sessions-root", str(tmp_path / "sessions")]
    running, go = tmp_path / "running", tmp_path / "go"
    command = f"touch {running}; while [ ! -e {go} ]; do sleep 0.02; done; echo let go"
    arguments = json.dumps({"command": command, "description": "wait"})
    script = [
        Reply([TextDelta("Waiting."), *tool_call(0, "call-1", "bash", arguments), Finish("tool_calls")]),
        text_reply("finished"),
        text_reply("taken over"),
    ]
    a, b = Recorder(), Recorder()
    try:
        async with WireServer(script) as wire, spawn(b, tmp_path, wire.base_url, *root) as (follower, _b):
            await follower.initialize(protocol_version=acp.PROTOCOL_VERSION)
            async with spawn(a, tmp_path, wire.base_url, *root) as (writer, _a):
                await writer.initialize(protocol_version=acp.PROTOCOL_VERSION)
                sid = (await writer.new_session(cwd=str(tmp_path), mcp_servers=[])).session_id
                turn = asyncio.ensure_future(writer.prompt(session_id=sid, prompt=[acp.text_block("wait for it")]))
                await until(running.exists)
                await follower.load_session(cwd=str(tmp_path), session_id=sid, mcp_servers=[])
                go.touch()
                assert (await asyncio.wait_for(turn, WAIT_S)).stop_reason == "end_turn"
                await until(lambda: ("agent_message_chunk", "finished") in shown(b, sid))
                assert shown(b, sid) == [("user_message_chunk", "wait for it"), *shown(a, sid)]
                assert b.cards(sid) == a.cards(sid)
                with pytest.raises(acp.RequestError) as refused:  # A still holds the session, though idle
                    await follower.prompt(session_id=sid, prompt=[acp.text_block("mine?")])
                assert refused.value.code == SESSION_FOLLOWED
            done = await follower.prompt(session_id=sid, prompt=[acp.text_block("mine now")])  # A has exited
            assert done.stop_reason == "end_turn"
            assert shown(b, sid)[-1] == ("agent_message_chunk", "taken over")
    finally:
        go.touch()
    assert_balanced(await stored_log(root, tmp_path, sid), turns=2)
