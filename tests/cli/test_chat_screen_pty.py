"""(issue 21) What a user of ``dsh chat`` sees on a real terminal, checked on an emulated screen.

``dsh chat`` runs on a pseudo-terminal (:mod:`tests.cli.pty_screen`); its output is
drawn by a terminal emulator and the tests read the visible lines: a partial answer
cut by Ctrl-C is on the screen once, a line typed while the model streams shows on a
line of its own (and reaches the agent as steering), and a bash command's output shows
while the command still runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsh.testing.wire import Finish, Reply, TextDelta, WireServer, text_reply, tool_call
from tests.cli.helpers import child_env, log_of, session_files, turn_ends
from tests.cli.pty_screen import chat_in_pty

pytestmark = pytest.mark.e2e


def chat_args(tmp_path: Path) -> tuple[str, ...]:
    workspace = tmp_path / "work"
    workspace.mkdir(exist_ok=True)
    return ("--sessions-root", str(tmp_path / "sessions"), "--cwd", str(workspace), "chat")


async def test_ctrl_c_mid_stream_leaves_the_partial_line_on_screen_once(tmp_path: Path) -> None:
    script = [Reply([TextDelta("The partial answer so far")], ending="stall")]
    async with WireServer(script) as wire:
        env = child_env(base_url=wire.base_url, home=tmp_path / "home")
        async with chat_in_pty(*chat_args(tmp_path), env=env, cwd=tmp_path) as (screen, process):
            await screen.wait_for("Type a message")
            screen.type(b"tell me something\r")
            await screen.wait_for("The partial answer so far")
            screen.type(b"\x03")
            await screen.wait_for("turn 1 ended")
            screen.type(b"\x04")
            await process.wait()
            assert screen.text.count("The partial answer so far") == 1, screen.text


async def test_a_line_typed_while_the_model_streams_shows_on_its_own_line_and_steers(tmp_path: Path) -> None:
    words = [TextDelta(f"word{index} ") for index in range(30)]
    script = [Reply([*words, Finish("stop")]), text_reply("Noted the extra request.")]
    async with WireServer(script, pace=0.1) as wire:
        env = child_env(base_url=wire.base_url, home=tmp_path / "home")
        async with chat_in_pty(*chat_args(tmp_path), env=env, cwd=tmp_path) as (screen, process):
            await screen.wait_for("Type a message")
            screen.type(b"count for me\r")
            await screen.wait_for("word3 ")
            screen.type(b"also say why\r")
            await screen.wait_for("Noted the extra request.")
            screen.type(b"\x04")
            assert await process.wait() == 0
            lines = screen.lines
    typed = [line for line in lines if "also say why" in line]
    assert typed == ["› also say why"], screen.text  # once, on a line of its own
    answer = [line for line in lines if "word" in line]
    assert answer, screen.text
    assert all(line.startswith("word") for line in answer), screen.text
    assert "word29" in " ".join(answer)
    assert lines.index(typed[0]) > lines.index(answer[0])  # shown where it was typed, during the stream
    steering = wire.requests[1].json["messages"][-1]
    assert steering["role"] == "user"
    assert "also say why" in json.dumps(steering)
    (path,) = session_files(tmp_path / "sessions")
    events = log_of(tmp_path / "sessions", path.stem)[1]
    assert [e["type"] for e in events].count("steering/message") == 1
    assert turn_ends(events) == [{"turn": 1, "reason": {"kind": "completed"}}]


async def test_a_bash_command_output_shows_while_it_runs(tmp_path: Path) -> None:
    # the card shows the command, never a whole marker
    command = "printf 'live-%s\\n' first second; sleep 2; seq 1 500; sleep 2; printf 'live-%s\\n' last"
    arguments = json.dumps({"command": command, "description": "print, wait, print"})
    script = [
        Reply([*tool_call(0, "call_1", "bash", arguments), Finish("tool_calls")]),
        text_reply("All printed."),
    ]
    async with WireServer(script) as wire:
        env = child_env(base_url=wire.base_url, home=tmp_path / "home")
        args = (*chat_args(tmp_path), "--permission-mode", "full-access")
        async with chat_in_pty(*args, env=env, cwd=tmp_path) as (screen, process):
            await screen.wait_for("Type a message")
            screen.type(b"print things\r")
            await screen.wait_for("live-second")
            running = screen.text
            await screen.wait_until(lambda lines: "500" in [line.strip() for line in lines], "the last line of seq")
            flooded = screen.lines
            await screen.wait_for("All printed.")
            screen.type(b"\x04")
            assert await process.wait() == 0
    assert "live-first" in running, running  # shown before the command ended
    assert "live-last" not in running, running
    assert "result" not in running
    shown = [line.strip() for line in flooded]  # under the spinner, indented
    assert "… 494 more lines" in shown, "\n".join(flooded)  # 502 lines so far: the last 8 shown
    assert [line for line in shown if line.isdigit()] == [str(n) for n in range(493, 501)]
    assert screen.text.count("live-last") == 1, screen.text  # in the result card only
    assert len(wire.requests) == 2
