"""(issue acceptance) ``dsh chat`` asks for approval in a real pseudo-terminal.

``dsh chat`` runs as a subprocess whose controlling terminal is a pseudo-terminal
the test types into (Enter, Ctrl-C and Ctrl-D go through the terminal's line
discipline, as a user's keys do). It runs the built-in profile with
``--permission-mode read-only``, so every ``write`` the model (the local wire server)
asks for is put to the user: ``n`` with a message rejects it and the model
reads the message; Ctrl-C at the question cancels the turn and the write.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import re
import struct
import termios
from pathlib import Path

import pytest

from dsh.cli.approve import QUESTION
from dsh.testing.wire import Finish as WireFinish
from dsh.testing.wire import Reply, WireServer, text_reply, tool_call
from tests.cli.helpers import DSH, child_env, log_of, session_files, turn_ends
from tests.cli.pty_screen import PtyMaster, controlling_terminal

pytestmark = pytest.mark.e2e

ANSI = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07]*\x07|[()][0-9A-Za-z])")


class Terminal(PtyMaster):
    """What the program drew (escapes removed) and keystrokes."""

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw.decode("utf-8", errors="replace")).replace("\r", "")

    async def wait_for(self, marker: str, count: int = 1) -> None:
        while self.text.count(marker) < count:
            assert not self.closed, f"the program ended before showing {marker!r}:\n{self.text}"
            self.changed.clear()
            await self.changed.wait()


def write_call(call_id: str, path: Path) -> Reply:
    arguments = json.dumps({"file_path": str(path), "content": "x\n"})
    return Reply([*tool_call(0, call_id, "write", arguments), WireFinish("tool_calls")])


async def test_chat_asks_in_a_pseudo_terminal_no_with_a_message_then_ctrl_c(tmp_path: Path) -> None:
    workspace = tmp_path / "work"
    workspace.mkdir()
    sessions = tmp_path / "sessions"
    script = [
        write_call("call_1", workspace / "first.txt"),
        text_reply("fine, I will not"),
        write_call("call_2", workspace / "second.txt"),
    ]
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    async with WireServer(script) as wire:
        env = {**child_env(base_url=wire.base_url, home=tmp_path / "home"), "TERM": "xterm", "COLUMNS": "200"}
        process = await asyncio.create_subprocess_exec(
            str(DSH),
            "--sessions-root",
            str(sessions),
            "--cwd",
            str(workspace),
            "chat",
            "--permission-mode",
            "read-only",
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=workspace,
            start_new_session=True,
            preexec_fn=controlling_terminal,
        )
        os.close(slave)
        terminal = Terminal(master)
        try:
            await terminal.wait_for("Type a message")
            terminal.type(b"please write first.txt\r")
            await terminal.wait_for(QUESTION.strip())
            assert "write needs your approval" in terminal.text
            terminal.type(b"n use the scratch dir instead\r")
            await terminal.wait_for("fine, I will not")

            terminal.type(b"then write second.txt\r")
            await terminal.wait_for(QUESTION.strip(), count=2)
            terminal.type(b"\x03")  # Ctrl-C at the question
            await terminal.wait_for("turn 2 ended")
            terminal.type(b"\x04")  # Ctrl-D at the prompt: end of input
            status = await asyncio.wait_for(process.wait(), 30)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
            terminal.close()
    assert status == 0, terminal.text
    assert not (workspace / "first.txt").exists()
    assert not (workspace / "second.txt").exists()
    tool_result = wire.requests[1].json["messages"][-1]
    assert tool_result["role"] == "tool"
    assert "use the scratch dir instead" in tool_result["content"]
    (path,) = session_files(sessions)
    events = log_of(sessions, path.stem)[1]
    assert [e["data"]["outcome"] for e in events if e["type"] == "approval/decided"] == ["rejected", "cancelled"]
    assert turn_ends(events)[1] == {"turn": 2, "reason": {"kind": "aborted", "reason": "interrupted"}}
