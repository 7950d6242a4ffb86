"""Step-level writes: before each model request the log on disk holds the turn so far.

The agent loop awaits ``session/checkpoint`` before every model call and before a step's
tool calls run; the JSONL backend
writes the buffered events then (without an fsync, which the turn's flush does), so a
kill of the process loses at most the step in flight.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from dsh.core.llm import GenerateOptions, StreamChunk
from dsh.core.session import SESSION_CHECKPOINT, SESSION_FLUSH
from dsh.core.tools import define_tool
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl, log_path
from dsh.plugins.persistence_jsonl import files as jsonl_files
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response, tool_call_response


def on_disk(root: Path, id: str) -> list[dict[str, Any]]:
    path = Path(log_path(str(root), None, id))
    assert path.exists(), f"{path} does not exist before the model request"
    lines = path.read_bytes().splitlines()
    return [json.loads(line) for line in lines[1:]]


def types_of(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


async def test_each_model_request_finds_the_turn_so_far_on_disk(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    seen: list[list[str]] = []
    holder: dict[str, str] = {}

    def looking(chunks: list[StreamChunk]) -> Any:
        def entry(_options: GenerateOptions) -> list[StreamChunk]:
            seen.append(types_of(on_disk(root, holder["id"])))
            return chunks

        return entry

    script = [
        looking(tool_call_response("c1", "note", {"n": 1})),
        looking(tool_call_response("c2", "note", {"n": 2})),
        looking(text_response("done")),
    ]
    async with Harness(script) as h:
        await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(root)})

        async def note(args: dict[str, Any], _exec: Any) -> list[Any]:
            return [{"type": "text", "text": f"noted {args['n']}"}]

        h.tools.register(
            define_tool(name="note", description="Take a note.", parameters={"n": {"type": "number"}}, execute=note)
        )
        agent = h.agent()
        holder["id"] = agent.session.header.id
        agent.send([{"type": "text", "text": "please take notes"}])
        await agent.when_idle()
        h.model.assert_consumed()
    first, second, third = seen
    assert first[first.index("user/message") :] == ["user/message", "step/start"]
    step_one = ["step/start", "assistant/message", "usage", "tool/call", "tool/result", "step/end"]
    tail = second[second.index("user/message") + 1 :]
    assert [t for t in tail if t in step_one] == [*step_one, "step/start"]
    assert third.count("tool/result") == 2
    assert third.count("step/end") == 2
    final = types_of(on_disk(root, holder["id"]))
    assert final[-1] == "turn/end"


async def test_a_tool_call_is_on_disk_before_the_tool_runs(tmp_path: Path) -> None:
    """a process killed while a tool runs leaves the call in the log: the resume closes it, never re-asks it"""
    root = tmp_path / "sessions"
    seen: list[list[dict[str, Any]]] = []
    holder: dict[str, str] = {}
    async with Harness([tool_call_response("c1", "note", {"n": 1}), text_response("done")]) as h:
        await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(root)})

        async def note(args: dict[str, Any], _exec: Any) -> list[Any]:
            seen.append(on_disk(root, holder["id"]))
            return [{"type": "text", "text": "noted"}]

        h.tools.register(
            define_tool(name="note", description="Take a note.", parameters={"n": {"type": "number"}}, execute=note)
        )
        agent = h.agent()
        holder["id"] = agent.session.header.id
        agent.send([{"type": "text", "text": "please take a note"}])
        await agent.when_idle()
        h.model.assert_consumed()
    (during,) = seen
    (message,) = [event for event in during if event["type"] == "assistant/message"]
    assert [block["id"] for block in message["data"]["content"] if block["type"] == "tool-call"] == ["c1"]
    assert "tool/result" not in types_of(during)


async def test_a_checkpoint_skips_the_fsync_and_the_flush_syncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "sessions"
    syncs: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        syncs.append(fd)
        real(fd)

    monkeypatch.setattr(jsonl_files.os, "fsync", counting)
    async with Harness([text_response("hello")], invariants_plugin=False) as h:
        await h.ctx.plugin(SessionPersistenceJsonl, {"root": str(root)})
        agent = h.agent()
        id = agent.session.header.id
        agent.send([{"type": "text", "text": "hi"}])
        await agent.when_idle()
        await h.ctx.parallel(SESSION_FLUSH, agent.session)
        agent.session.append(
            "context/message",
            {"content": [{"type": "text", "text": "x"}], "source": {"kind": "plugin", "plugin": "test"}},
        )
        syncs.clear()
        await h.ctx.parallel(SESSION_CHECKPOINT, agent.session)
        assert syncs == []  # written, not synced
        assert types_of(on_disk(root, id))[-1] == "context/message"
        await h.ctx.parallel(SESSION_FLUSH, agent.session)  # nothing left to append: the written bytes are synced
        assert len(syncs) == 1
        syncs.clear()
        await h.ctx.parallel(SESSION_FLUSH, agent.session)  # nothing written since: no sync
        assert syncs == []
        agent.session.append(
            "context/message",
            {"content": [{"type": "text", "text": "y"}], "source": {"kind": "plugin", "plugin": "test"}},
        )
        await h.ctx.parallel(SESSION_CHECKPOINT, agent.session)
        assert syncs == []
    assert len(syncs) == 1  # the dispose drain synced the checkpoint's write
