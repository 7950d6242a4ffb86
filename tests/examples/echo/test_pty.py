"""The interactive echo-agent in a pseudo-terminal: a tool round-trip, a steering line, Ctrl-D.

``start.py`` runs with a pty as its stdin and stdout (stderr goes to a file), as it does in
a real terminal: the terminal echoes what is typed, Enter is a carriage return, Ctrl-D at
the start of a line is end of input. Model text is streamed slowly
(``ECHO_AGENT_DELAY_MS``) so that a line typed after a turn's marker reliably arrives while
that turn is still running.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.examples.echo.helpers import EXIT_GUARD_S, START, child_env, session_events

pytestmark = pytest.mark.e2e

CTRL_D = b"\x04"


class PtySession:
    """A child process on a pseudo-terminal, with ``type`` and ``expect``."""

    def __init__(self, tmp_path: Path, env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.stderr_path = tmp_path / "stderr.txt"
        cwd = tmp_path / "cwd"
        cwd.mkdir()
        with self.stderr_path.open("wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, str(START)], stdin=slave, stdout=slave, stderr=stderr, cwd=cwd, env=env
            )
        os.close(slave)
        self.screen = ""
        self.closed = False

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def _read(self, timeout: float) -> None:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return
        try:
            data = os.read(self.master, 4096)
        except OSError:  # EIO: every copy of the slave is closed (the child exited)
            data = b""
        if not data:
            self.closed = True
        self.screen += data.decode("utf-8", errors="replace").replace("\r\n", "\n")

    def expect(self, text: str, start: int = 0) -> int:
        """Read until ``text`` appears on screen at or after ``start``; the index just past it."""
        deadline = time.monotonic() + EXIT_GUARD_S
        while (found := self.screen.find(text, start)) < 0:
            if self.closed or time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never appeared; screen so far:\n{self.screen}\n{self.stderr()}")
            self._read(0.5)
        return found + len(text)

    def drain(self) -> None:
        """Read everything until the child closed the terminal."""
        deadline = time.monotonic() + EXIT_GUARD_S
        while not self.closed and time.monotonic() < deadline:
            self._read(0.5)

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        os.close(self.master)


@pytest.fixture
def session(tmp_path: Path) -> Iterator[PtySession]:
    running = PtySession(tmp_path, child_env(tmp_path, ECHO_AGENT_DELAY_MS="25"))
    yield running
    running.close()


def test_an_interactive_chat_runs_a_tool_steers_a_running_turn_and_exits_on_ctrl_d(
    session: PtySession, tmp_path: Path
) -> None:
    """In a terminal: ``echo hello`` round-trips the tool, a line typed mid-turn steers it, Ctrl-D exits 0."""
    at = session.expect('echo-agent ready. Type a message ("echo <text>" triggers the tool).\n> ')

    session.type(b"echo hello\r")
    at = session.expect("echo hello\n", at)  # the terminal echoes what was typed
    at = session.expect("[main turn 1] Let me echo that for you.", at)
    at = session.expect('\n  [tool call] echo({"text":"hello"})\n  [tool result] ECHO: HELLO\n  ', at)
    at = session.expect("The echo tool has spoken.\n> ", at)

    session.type(b"how are you\r")
    at = session.expect("[main turn 2] ", at)
    session.type(b"and this too\r")  # typed while turn 2 streams its answer: steering
    at = session.expect('You said: "and this too". Try "echo <something>" to see a tool call.\n> ', at)
    assert "[main turn 3]" not in session.screen  # the steered line ran inside turn 2

    session.type(CTRL_D)
    session.drain()
    assert session.process.wait(timeout=EXIT_GUARD_S) == 0
    assert session.stderr() == ""

    events = session_events(tmp_path)
    steering = [event["data"] for event in events if event["type"] == "steering/message"]
    assert [data["turn"] for data in steering] == [2]
    assert steering[0]["content"] == [{"type": "text", "text": "and this too"}]
    assert [event["data"]["turn"] for event in events if event["type"] == "turn/end"] == [1, 2]
