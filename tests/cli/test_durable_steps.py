"""SIGKILL of `dsh run` at random moments of a tool-calling turn loses at most the step in flight.

The wire server answers every request with one more bash call, so the turn never ends
on its own; the test kills `dsh` at random delays. Every log left behind loads through
`dsh sessions show`, and every step that ended on disk holds each tool call's result.
"""

from __future__ import annotations

import asyncio
import json
import random
import signal
from pathlib import Path
from typing import Any

from dsh.testing.wire import Finish, Reply, ToolCallDelta, WireServer
from tests.cli.helpers import child_env, dsh, session_files, spawn

KILLS = 12


def bash_call() -> Reply:
    arguments = json.dumps({"command": "sleep 0.02; echo step"})
    return Reply([ToolCallDelta(0, arguments, id="call-1", name="bash"), Finish("tool_calls")])


def read_events(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the whole lines of a log; a kill in the middle of a write may leave a torn last line."""
    *whole, last = path.read_bytes().split(b"\n")
    assert last == b"" or len(whole) >= 1  # a torn tail is only ever the last line
    header, *events = (json.loads(line) for line in whole)
    return header, events


def finished_steps(events: list[dict[str, Any]]) -> int:
    """The steps with a step/end; each of them must hold a tool/result for every tool/call."""
    calls = results = done = 0
    for event in events:
        if event["type"] == "tool/call":
            calls += 1
        elif event["type"] == "tool/result":
            results += 1
        elif event["type"] == "step/end":
            assert calls == results, f"a finished step lost a tool result: {events}"
            calls = results = 0
            done += 1
    return done


async def first_log(root: Path, before: set[Path]) -> None:
    """Wait until a new session log appears under ``root`` (the turn's first write)."""
    while not set(session_files(root)) - before:
        await asyncio.sleep(0.02)


async def test_sigkill_at_random_points_keeps_every_finished_step(tmp_path: Path, workspace: Path) -> None:
    rng = random.Random(21)
    root = tmp_path / "sessions"
    finished = 0
    async with WireServer([bash_call()], repeat=True) as wire:
        env = child_env(base_url=wire.base_url, home=tmp_path / "home")
        for _ in range(KILLS):
            process = await spawn("--sessions-root", str(root), "run", "keep going", env=env, cwd=workspace, stdin=b"")
            await asyncio.wait_for(first_log(root, set(session_files(root))), 60)
            await asyncio.sleep(rng.uniform(0.0, 1.0))
            process.send_signal(signal.SIGKILL)
            await process.communicate()
    logs = session_files(root)
    assert logs, "no session log survived any kill"
    for path in logs:
        raw_header, raw_events = read_events(path)
        assert any(event["type"] == "user/message" for event in raw_events)
        finished += finished_steps(raw_events)
        shown = await dsh("--sessions-root", str(root), "sessions", "show", raw_header["id"], env=env, cwd=workspace)
        assert shown.status == 0, shown.stderr
        _, repaired = read_events(path)
        assert repaired[-1]["type"] == "turn/end"  # the load closed the interrupted turn
        assert finished_steps(repaired) >= finished_steps(raw_events)  # the repair closes the step in flight
    assert finished > 0, "no finished step was on disk when dsh was killed"
