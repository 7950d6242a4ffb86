"""SPEC §16.2 ``echo.e2e``: echo-agent keyless smoke (real tree.yml via the loader).

Each test spawns the real ``start.py`` from a temp working directory, pipes stdin lines,
closes stdin and expects exit status 0 (the pytest timeout and the run guard catch a hang).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.examples.echo.helpers import run_echo, session_events

pytestmark = pytest.mark.e2e


def test_boots_prints_its_welcome_banner_and_exits_cleanly_on_stdin_eof(tmp_path: Path) -> None:
    """echo-agent keyless smoke (real cordis.yml via the Loader) — boots, prints its welcome banner, and exits cleanly on stdin EOF"""
    done = run_echo(tmp_path, [])
    assert done.returncode == 0, done.stderr
    assert "echo-agent ready." in done.stdout
    assert done.stdout == 'echo-agent ready. Type a message ("echo <text>" triggers the tool).\n> '
    assert done.stderr == ""


def test_runs_the_echo_tool_round_trip_for_an_echo_line(tmp_path: Path) -> None:
    """echo-agent keyless smoke (real cordis.yml via the Loader) — runs the echo tool round-trip for an "echo …" line"""
    done = run_echo(tmp_path, ["echo hello world"])
    assert done.returncode == 0, done.stderr
    assert "[tool call] echo" in done.stdout
    assert "[tool result] ECHO: HELLO WORLD" in done.stdout
    assert done.stdout.endswith(
        "\n[main turn 1] Let me echo that for you."
        '\n  [tool call] echo({"text":"hello world"})'
        "\n  [tool result] ECHO: HELLO WORLD\n  The echo tool has spoken.\n> "
    )
    events = session_events(tmp_path)  # the JSONL backend persisted the whole turn
    assert [event["type"] for event in events if event["type"].startswith(("turn/", "tool/"))] == [
        "turn/start",
        "tool/call",
        "tool/result",
        "turn/end",
    ]


def test_streams_a_direct_canned_reply_for_a_non_echo_line(tmp_path: Path) -> None:
    """echo-agent keyless smoke (real cordis.yml via the Loader) — streams a direct canned reply for a non-echo line"""
    done = run_echo(tmp_path, ["just chatting"])
    assert done.returncode == 0, done.stderr
    assert "just chatting" in done.stdout
    assert "[tool call]" not in done.stdout
    assert done.stdout.endswith(
        '\n[main turn 1] You said: "just chatting". Try "echo <something>" to see a tool call.\n> '
    )
