"""Scenario 6, ACP: a prompt's round trip through the ACP bridge over real pipes, and the cost per update.

The agent is whatever stdio entry exists: ``dsh acp`` when ``dsh acp --help``
describes it and it answers ``initialize``, else ``examples/acp-agent/start.py`` (the
live tree); the DeepSeek adapter inside is pointed at a wire server. Each run is a
fresh agent process: ``initialize``, ``session/new``, a warm-up prompt, then a prompt
answered in one text chunk and one answered in N chunks. Per update = (t_N - t_1) /
(updates_N - updates_1), in wall time and in the agent process's CPU time (read from
``/proc/<pid>/stat``, 10 ms resolution, hence the long answer).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from dsh.testing.wire import WireServer, long_reply, text_reply
from dshbench.acp_client import AcpError, AcpPipe
from dshbench.metrics import Metric, unavailable
from dshbench.plan import Plan
from dshbench.scenarios.cold_start import dsh_command

SCENARIO = "acp"
INITIALIZE = {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}}}
CLOCK_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Entry:
    """A way to start an ACP agent on stdio: a label and the command (sessions root appended by the caller)."""

    label: str
    argv: tuple[str, ...]


@dataclass(frozen=True)
class PromptCost:
    wall: float
    cpu: float
    updates: int


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICK


def entries(plan: Plan) -> list[Entry]:
    """The stdio entries that exist, best first."""
    found = []
    dsh = dsh_command()
    if dsh.exists():
        probe = subprocess.run([str(dsh), "acp", "--help"], capture_output=True, text=True, timeout=60)
        if probe.returncode == 0 and "usage: dsh acp" in probe.stdout:
            found.append(Entry("dsh acp", (str(dsh), "acp")))
    start = plan.project / "examples" / "acp-agent" / "start.py"
    if start.exists():
        found.append(Entry("acp-agent/start.py", (sys.executable, str(start))))
    return found


def _env(home: str, base_url: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("DSH_SNAPSHOT", None)
    env.update(
        DSH_HOME=home,
        DSH_SNAPSHOT_SESSIONS_ROOT=os.path.join(home, "sessions"),
        DEEPSEEK_API_KEY="bench-key",
        DEEPSEEK_BASE_URL=base_url,
    )
    return env


async def _prompt(pipe: AcpPipe, session_id: str, words: str) -> PromptCost:
    pid = pipe.process.pid
    updates, cpu, wall = pipe.updates, process_cpu(pid), time.perf_counter()
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": words}]}
    result: Any = await pipe.request("session/prompt", prompt)
    cost = PromptCost(time.perf_counter() - wall, process_cpu(pid) - cpu, pipe.updates - updates)
    if not isinstance(result, dict) or result.get("stopReason") != "end_turn":
        raise AcpError(f"the prompt ended with {result!r}, expected stopReason end_turn")
    return cost


async def one_run(entry: Entry, chunks: int) -> tuple[PromptCost, PromptCost]:
    """A fresh agent process: the (short, long) prompt costs."""
    with tempfile.TemporaryDirectory(prefix="dsh-bench-") as home:
        workspace = os.path.join(home, "workspace")
        os.mkdir(workspace)
        script = [text_reply("warm"), long_reply(1), long_reply(chunks)]
        async with WireServer(script) as server:
            argv = list(entry.argv)
            if entry.label == "dsh acp":
                argv += ["--sessions-root", os.path.join(home, "sessions")]
            process = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=_env(home, server.base_url), cwd=workspace,
            )  # fmt: skip
            pipe = AcpPipe(process)
            pipe.start()
            try:
                await pipe.request("initialize", INITIALIZE, timeout=60)
                session = await pipe.request("session/new", {"cwd": workspace, "mcpServers": []})
                session_id = session["sessionId"]
                await _prompt(pipe, session_id, "Warm up.")
                short = await _prompt(pipe, session_id, "Answer briefly.")
                long = await _prompt(pipe, session_id, "Answer at length.")
            finally:
                await pipe.close()
    return short, long


async def run(plan: Plan) -> list[Metric]:
    names = ("prompt round trip, 1-chunk answer (wall)", "per streamed update (wall)", "per streamed update, agent CPU")
    units = ("ms", "µs", "µs")
    failures = []
    for entry in entries(plan):
        rows = [Metric(SCENARIO, f"{name} [{entry.label}]", unit) for name, unit in zip(names, units, strict=True)]
        try:
            for _ in range(plan.runs):
                short, long = await one_run(entry, plan.acp_chunks)
                extra = long.updates - short.updates
                rows[0].samples.append(short.wall * 1000)
                rows[1].samples.append((long.wall - short.wall) / extra * 1e6)
                rows[2].samples.append((long.cpu - short.cpu) / extra * 1e6)
        except (AcpError, TimeoutError) as error:
            failures.append(f"{entry.label}: {error}")
            continue
        return rows
    reason = "; ".join(failures) if failures else "no ACP stdio entry exists (dsh acp or examples/acp-agent/start.py)"
    return [unavailable(SCENARIO, name, unit, reason) for name, unit in zip(names, units, strict=True)]
