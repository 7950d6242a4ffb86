"""The official ACP SDK client against ``dsh acp`` over real pipes, for the extras tests.

:func:`tree` writes a plugin tree (the shared core, the commands service with
``/whoami``, the local filesystem and file tools, the loop, JSONL persistence) and
:func:`spawn` starts ``python -m dsh.cli --config tree.yml --model deepseek-v4-flash acp``
with the DeepSeek adapter pointed at a local wire server. :class:`Recorder` is the
client side: it records every update and serves ``fs/*`` from its own buffers.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

from acp.schema import ReadTextFileResponse, WriteTextFileResponse

import acp

PROJECT = Path(__file__).resolve().parents[2]


class Recorder:
    """The client: updates as JSON values (``updates``), ``fs/*`` calls (``calls``), buffers by path."""

    def __init__(self, buffers: dict[str, str] | None = None) -> None:
        self.updates: list[tuple[str, dict[str, Any]]] = []
        self.calls: list[tuple[str, str, str | None]] = []
        self.buffers = buffers if buffers is not None else {}

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update.model_dump(mode="json", by_alias=True, exclude_none=True)))

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any) -> ReadTextFileResponse:
        self.calls.append(("read", path, None))
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        self.calls.append(("write", path, content))
        self.buffers[path] = content
        return WriteTextFileResponse()

    def of(self, kind: str, session_id: str | None = None) -> list[dict[str, Any]]:
        return [u for sid, u in self.updates if u["sessionUpdate"] == kind and session_id in (None, sid)]

    def cards(self, session_id: str) -> list[dict[str, Any]]:
        """The session's tool cards (``tool_call`` and ``tool_call_update``), in order."""
        return [u for sid, u in self.updates if sid == session_id and u["sessionUpdate"].startswith("tool_call")]


def tree(tmp_path: Path) -> Path:
    path = tmp_path / "tree.yml"
    entries = [
        {"id": "base", "name": "include", "config": {"path": str(PROJECT / "examples" / "base.yml")}},
        {"id": "commands", "name": "commands"},
        {"id": "whoami", "name": "tests.acp.command_plugin"},
        {"id": "fs", "name": "fs-local"},
        {"id": "tool-fs", "name": "tool-fs"},
        {"id": "agent-loop", "name": "agent-loop", "config": {"agents": []}},
        {"id": "persistence", "name": "session-persistence-jsonl", "config": {"root": str(tmp_path / "sessions")}},
    ]
    path.write_text(json.dumps(entries))
    return path


def environment(base_url: str) -> dict[str, str]:
    path = os.pathsep.join([str(PROJECT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "DEEPSEEK_API_KEY": "dummy", "DEEPSEEK_BASE_URL": base_url, "PYTHONPATH": path}


@contextlib.asynccontextmanager
async def spawn(
    recorder: Recorder, tmp_path: Path, base_url: str, *args: str
) -> AsyncIterator[tuple[acp.ClientSideConnection, Any]]:
    """``dsh acp`` on ``tree(tmp_path)`` (or ``args`` instead of ``--config``), served to ``recorder``."""
    head = list(args) if args else ["--config", str(tree(tmp_path))]
    command = ["-m", "dsh.cli", *head, "--model", "deepseek-v4-flash", "acp"]
    async with acp.spawn_agent_process(
        cast(acp.Client, recorder),
        sys.executable,
        *command,
        env=environment(base_url),
        cwd=tmp_path,
        use_unstable_protocol=True,
    ) as (conn, proc):
        yield conn, proc
        proc.terminate()
        assert await proc.wait() == 0
