"""Step-level writes on SQLite: each model request finds the turn so far committed.

A checkpoint's commit runs at ``synchronous = NORMAL`` (no WAL fsync); the flush's
commit at ``FULL`` syncs it, and a flush with nothing left to commit checkpoints the
WAL instead.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from dsh.core.llm import GenerateOptions, StreamChunk
from dsh.core.persistence import SESSION_PERSISTENCE
from dsh.core.session import SESSION_CHECKPOINT, SESSION_FLUSH
from dsh.core.tools import define_tool
from dsh.plugins.persistence_sqlite import SessionPersistenceSqlite
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response, tool_call_response


def committed_types(path: Path) -> list[str]:
    """The event types another connection sees, in order."""
    with sqlite3.connect(path) as db:
        return [row[0] for row in db.execute("SELECT type FROM events ORDER BY session_id, seq")]


async def test_each_model_request_finds_the_finished_step_committed(db_path: Path) -> None:
    seen: list[list[str]] = []

    def looking(chunks: list[StreamChunk]) -> Any:
        def entry(_options: GenerateOptions) -> list[StreamChunk]:
            seen.append(committed_types(db_path))
            return chunks

        return entry

    async with Harness([looking(tool_call_response("c1", "note", {})), looking(text_response("done"))]) as h:
        await h.ctx.plugin(SessionPersistenceSqlite, {"path": str(db_path)})
        backend = h.ctx[SESSION_PERSISTENCE]
        assert isinstance(backend, SessionPersistenceSqlite)

        async def note(_args: dict[str, Any], _exec: Any) -> list[Any]:
            return [{"type": "text", "text": "noted"}]

        h.tools.register(define_tool(name="note", description="Take a note.", parameters={}, execute=note))
        agent = h.agent()
        agent.send([{"type": "text", "text": "note it"}])
        await agent.when_idle()
        h.model.assert_consumed()
        agent.session.append("turn/start", {"turn": 2, "trigger": {"kind": "injection", "source": {"kind": "user"}}})
        await h.ctx.parallel(SESSION_CHECKPOINT, agent.session)
        assert committed_types(db_path)[-1] == "turn/start"
        assert backend.db.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL again after the write
        await h.ctx.parallel(SESSION_FLUSH, agent.session)  # nothing to commit: the WAL is checkpointed
        agent.session.append("turn/end", {"turn": 2, "reason": {"kind": "completed"}})
    first, second = seen
    assert first[-2:] == ["user/message", "step/start"]
    assert second[-3:] == ["tool/result", "step/end", "step/start"]
    with sqlite3.connect(db_path) as db:
        assert db.execute("SELECT count(*) FROM events").fetchone()[0] == len(committed_types(db_path))
    assert committed_types(db_path)[-1] == "turn/end"
