"""SIGKILL of `dsh run` at random moments of a first, tool-calling turn loses at most the step in flight.

The wire server answers every request with one more bash call, so the turn never ends
on its own; the test kills `dsh` at random delays from its start, 50 times: some
before its session log exists, most during the turn. Every log left behind loads
through `dsh sessions show`, every step that ended on disk holds each tool call's
result, and every session id `dsh` printed names one of those logs.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import signal
from pathlib import Path
from typing import Any

import pytest

from dsh.testing.wire import Finish, Reply, ToolCallDelta, WireServer
from tests.cli.helpers import child_env, dsh, session_files, spawn

KILLS = 50


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


@pytest.mark.timeout(600)  # 50 runs of dsh, each killed: about a minute on an idle 2-core machine
async def test_sigkill_at_random_points_keeps_every_finished_step(tmp_path: Path, workspace: Path) -> None:
    rng = random.Random(21)
    root = tmp_path / "sessions"
    finished = 0
    announced: set[str] = set()
    async with WireServer([bash_call()], repeat=True) as wire:
        env = child_env(base_url=wire.base_url, home=tmp_path / "home")
        for kill in range(KILLS):
            process = await spawn("--sessions-root", str(root), "run", "keep going", env=env, cwd=workspace, stdin=b"")
            if kill % 5 == 0:  # from its start: before, while or after its first write
                await asyncio.sleep(rng.uniform(0.0, 0.8))
            else:
                await asyncio.wait_for(first_log(root, set(session_files(root))), 60)
                await asyncio.sleep(rng.uniform(0.0, 1.0))
            process.send_signal(signal.SIGKILL)
            _, err = await process.communicate()
            announced.update(re.findall(r"^dsh: session (\S+)$", err.decode(), re.MULTILINE))
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
    assert announced <= {path.stem for path in logs}, "a printed session id names no stored session"
    assert len(announced) >= KILLS // 2
