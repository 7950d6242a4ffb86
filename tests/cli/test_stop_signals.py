"""SIGTERM and SIGHUP to a real `dsh run` / `dsh chat` whose tool runs `sleep 30`.

Each must abort the turn (the log records its end), kill the bash call's process
group, flush the log and exit 143 / 129; a second signal exits without waiting.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from tests.cli.helpers import child_env, finish, log_of, session_id_of, spawn
from tests.cli.helpers import turn_ends as ends

pytestmark = pytest.mark.e2e

STATUS = {signal.SIGTERM: 143, signal.SIGHUP: 129}
REASON = {signal.SIGTERM: "terminated", signal.SIGHUP: "hangup"}


def sleeper(workspace: Path) -> tuple[str, Path]:
    """A demo prompt whose bash call writes its shell's pid to a file and sleeps; and that file."""
    pid_file = workspace / "bash.pid"
    return f"$ echo $$ > {pid_file}.tmp && mv {pid_file}.tmp {pid_file} && sleep 30", pid_file


async def wait_for(pid_file: Path) -> int:
    while not pid_file.exists():
        await asyncio.sleep(0.02)
    return int(pid_file.read_text())


async def gone(group: int) -> bool:
    """True once no process is left in process group ``group`` (polling; a safety net of 10 s)."""
    for _ in range(500):
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        await asyncio.sleep(0.02)
    return False


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP])
async def test_run_aborts_the_turn_kills_the_tool_and_exits_with_the_signal_status(
    number: signal.Signals, tmp_path: Path, workspace: Path
) -> None:
    prompt, pid_file = sleeper(workspace)
    process = await spawn("run", "--demo", prompt, env=child_env(key=None, home=tmp_path), cwd=workspace)
    shell = await wait_for(pid_file)
    process.send_signal(number)
    done = await finish(process)
    assert done.status == STATUS[number]
    assert f"{number.name}: interrupting the turn" in done.stderr
    assert "Traceback" not in done.stderr
    _, events = log_of(tmp_path / "sessions", session_id_of(done.stderr))
    assert ends(events)[-1] == {"turn": 1, "reason": {"kind": "aborted", "reason": REASON[number]}}
    assert await gone(shell)


async def test_a_second_sigterm_exits_at_once(tmp_path: Path, workspace: Path) -> None:
    """A tool that ignores SIGTERM cannot hold dsh: the second SIGTERM stops waiting."""
    pid_file = workspace / "bash.pid"
    prompt = f"$ echo $$ > {pid_file}.tmp && mv {pid_file}.tmp {pid_file} && sleep 30"
    process = await spawn("run", "--demo", prompt, env=child_env(key=None, home=tmp_path), cwd=workspace)
    shell = await wait_for(pid_file)
    process.send_signal(signal.SIGTERM)
    process.send_signal(signal.SIGTERM)
    done = await finish(process)
    assert done.status == 143
    assert "Traceback" not in done.stderr
    assert await gone(shell)


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP])
async def test_chat_aborts_the_turn_and_exits_with_the_signal_status(
    number: signal.Signals, tmp_path: Path, workspace: Path
) -> None:
    prompt, pid_file = sleeper(workspace)
    process = await spawn("chat", "--demo", env=child_env(key=None, home=tmp_path), cwd=workspace)
    assert process.stdin is not None
    process.stdin.write(prompt.encode() + b"\n")
    await process.stdin.drain()
    shell = await wait_for(pid_file)
    process.send_signal(number)
    done = await finish(process)
    assert done.status == STATUS[number]
    assert "Traceback" not in done.stderr
    (log,) = (tmp_path / "sessions").glob("*/*.jsonl")
    _, events = log_of(tmp_path / "sessions", log.stem)
    assert ends(events)[-1] == {"turn": 1, "reason": {"kind": "aborted", "reason": REASON[number]}}
    assert await gone(shell)


async def test_sigterm_to_an_idle_chat_exits_143(tmp_path: Path, workspace: Path) -> None:
    process = await spawn("chat", "--demo", env=child_env(key=None, home=tmp_path), cwd=workspace)
    assert process.stdout is not None
    await process.stdout.readline()  # the banner: the chat is up
    process.send_signal(signal.SIGTERM)
    done = await finish(process)
    assert done.status == 143


async def test_a_second_sighup_ends_the_chat_at_once(tmp_path: Path, workspace: Path) -> None:
    prompt, pid_file = sleeper(workspace)
    process = await spawn("chat", "--demo", env=child_env(key=None, home=tmp_path), cwd=workspace)
    assert process.stdin is not None
    process.stdin.write(prompt.encode() + b"\n")
    await process.stdin.drain()
    shell = await wait_for(pid_file)
    process.send_signal(signal.SIGHUP)
    process.send_signal(signal.SIGHUP)
    done = await finish(process)
    assert done.status == 129
    assert await gone(shell)


async def test_piped_lines_become_one_turn_each(tmp_path: Path, workspace: Path) -> None:
    """stdin not a terminal: every line is its own turn, in order, even when they all arrive at once."""
    process = await spawn(
        "chat", "--demo", env=child_env(key=None, home=tmp_path), cwd=workspace, stdin=b"echo one\necho two\n"
    )
    done = await finish(process)
    assert done.status == 0
    (log,) = (tmp_path / "sessions").glob("*/*.jsonl")
    _, events = log_of(tmp_path / "sessions", log.stem)
    assert [end["turn"] for end in ends(events)] == [1, 2]
    prompts = [event["data"]["content"][0]["text"] for event in events if event["type"] == "user/message"]
    assert prompts == ["echo one", "echo two"]
