"""Fixtures of the fleet tests: one local Ray cluster per test process, a scripted provider."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from dsh.testing.wire import Entry, Finish, RecordedRequest, Reply, Usage, WireServer, text_reply, tool_call
from tests.cli.fleet.cluster import RayCluster

TOOL_COMMAND = "sleep 0.3; echo ran >> ran.txt"
"""What every scripted task runs once: a short pause, then a line in its workspace's ran.txt."""


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[RayCluster]:
    """A 2-CPU local Ray cluster shared by the tests of this process (each xdist worker has its own)."""
    cluster = RayCluster(cpus=2)
    yield cluster
    cluster.stop()


GATED_COMMAND = "touch started; while [ ! -e go ]; do sleep 0.02; done; echo ran >> ran.txt"
"""The tool of a gated task: it says it started (``started``), then waits for a ``go`` file in its workspace."""


def respond(request: RecordedRequest, command: str = TOOL_COMMAND) -> Entry:
    """Each task: first a bash call (its id from the task's prompt), then, once a tool result is in, an answer."""
    messages = request.json["messages"]
    if any(message["role"] == "tool" for message in messages):
        return text_reply("done", usage=Usage(20, 2))
    prompt = next(message["content"] for message in messages if message["role"] == "user")
    call_id = "call-" + prompt.replace(" ", "-")
    arguments = json.dumps({"command": command})
    return Reply([*tool_call(0, call_id, "bash", arguments), Finish("tool_calls", Usage(10, 5))])


def respond_gated(request: RecordedRequest) -> Entry:
    """:func:`respond` with :data:`GATED_COMMAND` for the tool: a task that holds its session until told to go."""
    return respond(request, GATED_COMMAND)


@pytest.fixture
async def gated_server(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[WireServer]:
    """A wire server answering :func:`respond_gated`, the provider's environment pointing at it."""
    async with WireServer(respond=respond_gated) as wire:
        monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test")
        monkeypatch.setenv("DEEPSEEK_BASE_URL", wire.base_url)
        yield wire


async def started(workspace: Path) -> None:
    """Wait until a gated task's tool runs in ``workspace`` (its session is held, mid-turn)."""
    async with asyncio.timeout(60):
        while not (workspace / "started").exists():
            await asyncio.sleep(0.02)
