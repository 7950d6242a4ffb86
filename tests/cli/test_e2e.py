"""The real `dsh` executable in subprocesses, against the local wire server standing in for the API.

These are the acceptance checks of the command: what a user (or a script) sees.
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import signal
import sys
from pathlib import Path

import pytest

from dsh import __version__
from dsh.core.session import CompletedReason, TurnEndData, TurnEndEvent, parse_session_event_line
from dsh.plugins.demo import LABEL
from dsh.testing.wire import Reply, TextDelta, WireServer, api_error, text_reply
from tests.cli.helpers import DSH, child_env, dsh, finish, log_of, read_log, session_files, session_id_of, spawn
from tests.cli.helpers import turn_ends as ends
from tests.sealing import unsealed_text

pytestmark = pytest.mark.e2e


async def test_run_prints_the_answer_and_exits_0(server: WireServer, tmp_path: Path, workspace: Path) -> None:
    server.add(text_reply("The answer", " is 42."))
    done = await dsh("run", "what is it?", env=child_env(base_url=server.base_url, home=tmp_path), cwd=workspace)
    assert (done.status, done.stdout) == (0, "The answer is 42.\n")
    session_id = session_id_of(done.stderr)
    _, events = log_of(tmp_path / "sessions", session_id)
    assert ends(events) == [{"turn": 1, "reason": {"kind": "completed"}}]


async def test_run_json_lines_parse_into_session_events(server: WireServer, tmp_path: Path, workspace: Path) -> None:
    server.add(text_reply("ok"))
    done = await dsh("run", "--json", "hi", env=child_env(base_url=server.base_url, home=tmp_path), cwd=workspace)
    assert done.status == 0
    *lines, summary = done.stdout.splitlines()
    events = [parse_session_event_line(line) for line in lines]
    assert [event.seq for event in events] == list(range(len(events)))
    assert events[-1] == TurnEndEvent(seq=events[-1].seq, time=events[-1].time, data=TurnEndData(1, CompletedReason()))
    _, logged = log_of(tmp_path / "sessions", session_id_of(done.stderr))
    assert done.json_lines()[:-1] == logged
    assert json.loads(summary)["sessionId"] == session_id_of(done.stderr)


async def test_a_failing_model_exits_non_zero_with_the_error_on_stderr(
    server: WireServer, tmp_path: Path, workspace: Path
) -> None:
    server.add(api_error(400, "the model is on fire"))  # permanent: llm-retry passes it on
    done = await dsh("run", "hi", env=child_env(base_url=server.base_url, home=tmp_path), cwd=workspace)
    assert done.status == 1
    assert done.stdout == ""
    assert "dsh: turn 1 ended: error: " in done.stderr
    assert "the model is on fire" in done.stderr


async def test_sigint_mid_stream_leaves_an_aborted_turn_in_the_log(
    server: WireServer, tmp_path: Path, workspace: Path
) -> None:
    """Ctrl-C while the answer streams: exit 130 and the log's last turn ended `aborted`."""
    server.add(Reply([TextDelta("partial")], ending="stall"))
    process = await spawn("run", "hang", env=child_env(base_url=server.base_url, home=tmp_path), cwd=workspace)
    assert process.stdout is not None
    seen = b""
    while b"partial" not in seen:
        piece = await process.stdout.read(64)
        assert piece, "dsh ended before streaming"
        seen += piece
    process.send_signal(signal.SIGINT)
    done = await finish(process)
    assert done.status == 130
    assert "dsh: turn 1 ended: aborted (interrupted)" in done.stderr
    _, events = log_of(tmp_path / "sessions", session_id_of(done.stderr))
    assert ends(events)[-1] == {"turn": 1, "reason": {"kind": "aborted", "reason": "interrupted"}}
    await server.wait_for_connections(0)


async def test_resume_continues_numbering_and_sessions_commands_read_what_run_wrote(
    server: WireServer, tmp_path: Path, workspace: Path
) -> None:
    server.add(text_reply("one"), text_reply("two"))
    env = child_env(base_url=server.base_url, home=tmp_path)
    first = await dsh("run", "first prompt", env=env, cwd=workspace)
    session_id = session_id_of(first.stderr)
    second = await dsh("run", "--resume", session_id, "second prompt", env=env, cwd=workspace)
    assert (second.status, second.stdout) == (0, "two\n")
    _, events = log_of(tmp_path / "sessions", session_id)
    assert [end["turn"] for end in ends(events)] == [1, 2]

    listed = await dsh("sessions", "list", env=env, cwd=workspace)
    assert listed.status == 0
    header, row = listed.stdout.splitlines()
    assert header.split() == ["ID", "CREATED", "TURNS", "CWD", "FIRST", "PROMPT"]
    assert row.startswith(session_id)
    assert row.split()[-4:] == ["2", str(workspace), "first", "prompt"]

    shown = await dsh("sessions", "show", session_id, env=env, cwd=workspace)
    assert shown.status == 0
    # the session pins its permission mode at its first turn
    assert "user: first prompt\n  [permission/mode]\nassistant: one\n── turn 1 ended: completed ──" in shown.stdout
    assert "user: second prompt\nassistant: two\n── turn 2 ended: completed ──" in shown.stdout

    as_json = await dsh("sessions", "show", "--json", session_id, env=env, cwd=workspace)
    (path,) = session_files(tmp_path / "sessions")
    assert as_json.stdout == unsealed_text(path.read_text(encoding="utf-8"))

    removed = await dsh("sessions", "rm", session_id, env=env, cwd=workspace)
    assert (removed.status, removed.stdout) == (0, f"removed {session_id}\n")
    assert session_files(tmp_path / "sessions") == []


async def test_run_demo_works_keylessly(tmp_path: Path, workspace: Path) -> None:
    done = await dsh("run", "--demo", "what is here?", env=child_env(key=None, home=tmp_path), cwd=workspace)
    assert done.status == 0
    assert done.stdout.startswith(f"{LABEL} I will run `ls` with the bash tool.\n")
    assert "printed 1 line" in done.stdout
    assert "notes.txt" in done.stdout
    header, events = read_log(session_files(tmp_path / "sessions")[0])
    assert header["cwd"] == str(workspace)
    assert [event["data"]["name"] for event in events if event["type"] == "tool/call"] == ["bash"]


async def test_run_without_a_key_explains_and_exits_2(tmp_path: Path, workspace: Path) -> None:
    done = await dsh("run", "hi", env=child_env(key=None, home=tmp_path), cwd=workspace)
    assert (done.status, done.stdout) == (2, "")
    assert "DEEPSEEK_API_KEY" in done.stderr
    assert "--demo" in done.stderr


async def test_python_dash_m_dsh_cli_is_the_command(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "dsh.cli", "--version", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    done = await finish(process)
    assert (done.status, done.stdout, done.stderr) == (0, f"dsh {__version__}\n", "")


async def test_acp_serves_the_protocol_on_stdio(tmp_path: Path, workspace: Path) -> None:
    """`dsh acp --demo`: initialize, a session, one prompt with a real bash call, then EOF ends it (0)."""
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}},
    ]
    process = await spawn("acp", "--demo", env=child_env(key=None, home=tmp_path), cwd=workspace)
    assert process.stdin is not None
    assert process.stdout is not None
    for frame in frames:
        process.stdin.write(json.dumps(frame).encode() + b"\n")
    await process.stdin.drain()
    initialized = json.loads(await process.stdout.readline())
    assert initialized["result"]["agentInfo"] == {"name": "dsh", "version": __version__}
    created = json.loads(await process.stdout.readline())
    session_id = created["result"]["sessionId"]
    prompt = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "session/prompt",
        "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "echo via acp"}]},
    }
    process.stdin.write(json.dumps(prompt).encode() + b"\n")
    await process.stdin.drain()
    updates: list[dict[str, object]] = []
    while True:
        frame = json.loads(await process.stdout.readline())
        if frame.get("id") == 3:
            assert frame["result"]["stopReason"] == "end_turn"
            break
        updates.append(frame)
    assert {frame["method"] for frame in updates} == {"session/update"}
    assert "via acp" in json.dumps(updates)
    process.stdin.close()
    done = await finish(process)
    assert (done.status, done.stdout) == (0, "")
    _, events = log_of(tmp_path / "sessions", session_id)
    assert ends(events) == [{"turn": 1, "reason": {"kind": "completed"}}]


async def test_chat_on_a_pipe_is_plain_text(tmp_path: Path, workspace: Path) -> None:
    done = await dsh(
        "chat", "--demo", env=child_env(key=None, home=tmp_path), cwd=workspace, stdin=b"echo plain chat\n"
    )
    assert done.status == 0
    assert done.stdout.startswith("dsh chat · session ")
    assert "\n[main turn 1] " in done.stdout
    assert "[tool call] bash(" in done.stdout
    assert "[tool result] plain chat" in done.stdout
    assert "\x1b[" not in done.stdout


async def test_chat_on_a_terminal_draws_with_rich(tmp_path: Path, workspace: Path) -> None:
    """Under a pseudo-terminal: a banner panel, tool cards, markdown; Ctrl-D ends it with 0."""
    leader, follower = pty.openpty()
    env = {**child_env(key=None, home=tmp_path), "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "40"}
    process = await asyncio.create_subprocess_exec(
        str(DSH), "chat", "--demo", stdin=follower, stdout=follower, stderr=follower, env=env, cwd=workspace
    )
    os.close(follower)
    loop = asyncio.get_running_loop()
    received = bytearray()
    arrived = asyncio.Event()

    def on_readable() -> None:
        try:
            data = os.read(leader, 65536)
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(leader)
        received.extend(data)
        arrived.set()

    async def wait_for(marker: bytes) -> None:
        while marker not in received:
            arrived.clear()
            await arrived.wait()

    loop.add_reader(leader, on_readable)
    try:
        await wait_for(b"Ctrl-D quits")
        os.write(leader, b"echo rich chat\n")
        await wait_for(b"This is the keyless demo")
        os.write(leader, b"\x04")
        assert await process.wait() == 0
    finally:
        loop.remove_reader(leader)
        os.close(leader)
    text = received.decode(errors="replace")
    assert "╭" in text
    assert "$ echo 'rich chat'" in text
    assert "\x1b[" in text
    assert "[tool call]" not in text


async def test_chat_on_a_terminal_steers_a_running_turn(tmp_path: Path, workspace: Path) -> None:
    """Under a pseudo-terminal: a line typed while a tool runs steers the running turn (no new turn)."""
    leader, follower = pty.openpty()
    env = {**child_env(key=None, home=tmp_path), "TERM": "xterm-256color", "COLUMNS": "100", "LINES": "40"}
    process = await asyncio.create_subprocess_exec(
        str(DSH), "chat", "--demo", stdin=follower, stdout=follower, stderr=follower, env=env, cwd=workspace
    )
    os.close(follower)
    loop = asyncio.get_running_loop()
    received = bytearray()
    arrived = asyncio.Event()

    def on_readable() -> None:
        try:
            data = os.read(leader, 65536)
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(leader)
        received.extend(data)
        arrived.set()

    async def wait_for(marker: bytes) -> None:
        while marker not in received:
            arrived.clear()
            await arrived.wait()

    started = workspace / "started"
    release = workspace / "release"
    loop.add_reader(leader, on_readable)
    try:
        await wait_for(b"Ctrl-D quits")
        # the tool waits for a file the test creates, so the turn is surely running while we type
        os.write(leader, b"$ touch started; while [ ! -e release ]; do sleep 0.01; done\n")
        while not started.exists():
            await asyncio.sleep(0.01)
        os.write(leader, b"also look at the readme\n")
        while b"also look at the readme" not in received:
            arrived.clear()
            await arrived.wait()
        release.touch()
        await wait_for(b"finished and printed")
        os.write(leader, b"\x04")
        assert await process.wait() == 0
    finally:
        loop.remove_reader(leader)
        os.close(leader)
    (path,) = session_files(tmp_path / "sessions")
    _header, events = read_log(path)
    steering = [event["data"] for event in events if event["type"] == "steering/message"]
    assert [data["turn"] for data in steering] == [1]
    assert steering[0]["content"] == [{"type": "text", "text": "also look at the readme"}]
    assert [event["data"]["turn"] for event in events if event["type"] == "turn/start"] == [1]
