"""(issue 16 acceptance) A scripted coding task in a ``dsh run`` subprocess, then ``session/load`` over
ACP replays the same tool cards a live ACP run of the same script shows.

The model (the wire test server, scripted) reads ``calc.py``, fixes it with ``edit``,
greps for the function and runs the test with ``bash``. The same script runs once
through ``dsh run`` and once live through ``dsh acp`` (the official SDK client, same
workspace, files reset in between); loading the ``dsh run`` session then replays its
log as updates, and its cards equal the live ones.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

import acp
from dsh.testing.wire import Finish, Reply, WireServer, text_reply, tool_call
from tests.acp.sdk import Recorder, environment, spawn

CALC = "def add(a, b):\n    return a - b\n"
TEST = "from calc import add\n\nassert add(2, 3) == 5, add(2, 3)\nprint('tests passed')\n"


def call(call_id: str, name: str, arguments: dict[str, Any]) -> Reply:
    return Reply([*tool_call(0, call_id, name, json.dumps(arguments)), Finish("tool_calls")])


def script() -> list[Reply]:
    return [
        call("call_read", "read", {"file_path": "calc.py"}),
        call("call_edit", "edit", {"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"}),
        call("call_grep", "grep", {"pattern": "def add"}),
        call("call_test", "bash", {"command": f"{sys.executable} test_calc.py", "description": "run the test"}),
        text_reply("fixed: add adds"),
    ]


def reset(workspace: Path) -> None:
    (workspace / "calc.py").write_text(CALC)
    (workspace / "test_calc.py").write_text(TEST)


async def test_a_dsh_run_session_replays_over_acp_to_the_cards_of_a_live_acp_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    root = tmp_path / "sessions"
    reset(workspace)
    profile = ["--sessions-root", str(root), "--cwd", str(workspace)]
    async with WireServer(script()) as wire:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "dsh.cli",
            *profile,
            "--model",
            "deepseek-v4-flash",
            "run",
            "fix the failing test",
            env=environment(wire.base_url),
            cwd=tmp_path,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    assert out.decode().strip() == "fixed: add adds"
    assert (workspace / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    (log,) = root.rglob("*.jsonl")
    ran_id = log.stem

    reset(workspace)
    recorder = Recorder()
    async with WireServer(script()) as wire, spawn(recorder, tmp_path, wire.base_url, *profile) as (conn, _proc):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        live = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        done = await conn.prompt(session_id=live.session_id, prompt=[acp.text_block("fix the failing test")])
        assert done.stop_reason == "end_turn"
        await conn.load_session(cwd=str(workspace), session_id=ran_id, mcp_servers=[])
    live_cards = recorder.cards(live.session_id)
    replayed = recorder.cards(ran_id)
    assert [card.get("toolCallId") for card in live_cards if card["sessionUpdate"] == "tool_call"] == [
        "call_read",
        "call_edit",
        "call_grep",
        "call_test",
    ]
    assert replayed == live_cards
    kinds = {card["toolCallId"]: card["kind"] for card in live_cards if card["sessionUpdate"] == "tool_call"}
    assert kinds == {"call_read": "read", "call_edit": "edit", "call_grep": "search", "call_test": "execute"}
    edit = next(c for c in replayed if c["sessionUpdate"] == "tool_call_update" and c["toolCallId"] == "call_edit")
    assert edit["content"] == [
        {"type": "diff", "path": str(workspace / "calc.py"), "oldText": CALC, "newText": CALC.replace("-", "+")}
    ]
    test = next(c for c in replayed if c["sessionUpdate"] == "tool_call_update" and c["toolCallId"] == "call_test")
    assert test["status"] == "completed"
    assert "tests passed" in json.dumps(test["content"])
