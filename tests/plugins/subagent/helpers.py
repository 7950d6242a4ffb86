"""The stack of the sub-agent tests: the real services, bash, JSONL logs and the plugin, with a
scripted model per agent (``mock`` for the parent, any other name for a child)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from dsh.core.persistence import SESSION_PERSISTENCE, SessionPersistence
from dsh.core.session import SessionEvent, ToolCallEvent, ToolResultEvent, TurnEndEvent, TurnStartEvent
from dsh.core.subagent import SUBAGENTS, Subagents
from dsh.plugins import subagent, tool_bash
from dsh.plugins.bash_local import LocalBashExecutor
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl
from dsh.testing.harness import Harness
from dsh.testing.scripted import ScriptedModel, ScriptEntry


async def boot(h: Harness, root: Path, config: dict[str, Any] | None = None) -> Subagents:
    """Load persistence under ``root``, bash and the plugin into ``h``; return the service."""
    await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(root)})
    await h.ctx.plugin(LocalBashExecutor)
    await h.ctx.plugin(tool_bash)
    await h.ctx.plugin(subagent, config or {})
    service = h.ctx.get(SUBAGENTS)
    assert service is not None
    return service


def child_model(h: Harness, name: str, *script: ScriptEntry) -> ScriptedModel:
    """A scripted model served as ``name`` (a child asks it through ``model``)."""
    model = ScriptedModel(script)
    h.llm.register_adapter([name], model)
    return model


def persistence(h: Harness) -> SessionPersistence:
    found = h.ctx.get(SESSION_PERSISTENCE)
    assert found is not None
    return found


def sleeper(pidfile: Path) -> str:
    """A bash command that records its pid in ``pidfile`` and sleeps 30 s as that same process."""
    return f"echo $$ > {pidfile}; exec sleep 30"


async def pid_of(pidfile: Path) -> int:
    """The pid a :func:`sleeper` wrote (waits for the file, at most 10 s)."""
    for _ in range(1000):
        if pidfile.exists() and pidfile.read_text().strip():
            return int(pidfile.read_text())
        await asyncio.sleep(0.01)
    raise AssertionError(f"{pidfile} never appeared")


def alive(pid: int) -> bool:
    """True while a process with that pid exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


async def gone_by(pid: int, deadline: float) -> bool:
    """Wait until the process is gone or ``time.monotonic()`` passes ``deadline``; True when gone.

    A cancelled bash call answers at once; its process group gets SIGTERM at that moment
    and is reaped by the executor in the background.
    """
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.005)
    return True


def assert_balanced(events: list[SessionEvent]) -> None:
    """Every ``turn/start`` has its ``turn/end``, every ``tool/call`` its ``tool/result``."""
    starts = [event for event in events if type(event) is TurnStartEvent]
    ends = [event for event in events if type(event) is TurnEndEvent]
    assert len(starts) == len(ends), (len(starts), len(ends))
    calls = {event.data.call_id for event in events if type(event) is ToolCallEvent}
    results = [event.data.call_id for event in events if type(event) is ToolResultEvent]
    assert sorted(calls) == sorted(results)
