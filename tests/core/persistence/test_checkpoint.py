"""``session/checkpoint`` over a backend with the default hooks, and a checkpoint that fails.

The default ``write_batch`` appends durably and the default ``sync_log`` does nothing,
so a backend without a cheaper write still stores every finished step before the next
model request. A checkpoint that fails fails the step before the model is called.
"""

from __future__ import annotations

from typing import Any

from dsh.core.llm import GenerateOptions, StreamChunk, to_json
from dsh.core.persistence import MemoryPersistence, MemoryStorage
from dsh.core.session import SESSION_CHECKPOINT, Session
from dsh.core.tools import define_tool
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response, tool_call_response


async def test_the_memory_backend_holds_each_finished_step_at_the_next_request() -> None:
    storage = MemoryStorage()
    seen: list[list[str]] = []

    def stored_types() -> list[str]:
        ((_, events),) = storage.logs.values()
        return [event.type for event in events]

    def looking(chunks: list[StreamChunk]) -> Any:
        def entry(_options: GenerateOptions) -> list[StreamChunk]:
            seen.append(stored_types())
            return chunks

        return entry

    async with Harness([looking(tool_call_response("c1", "note", {})), looking(text_response("done"))]) as h:
        await h.ctx.plugin(MemoryPersistence, {"store": storage})

        async def note(_args: dict[str, Any], _exec: Any) -> list[Any]:
            return [{"type": "text", "text": "noted"}]

        h.tools.register(define_tool(name="note", description="Take a note.", parameters={}, execute=note))
        agent = h.agent()
        agent.send([{"type": "text", "text": "note it"}])
        await agent.when_idle()
        h.model.assert_consumed()
    first, second = seen
    assert first[-2:] == ["user/message", "step/start"]
    assert second[-3:] == ["tool/result", "step/end", "step/start"]
    assert stored_types()[-1] == "turn/end"


async def test_a_failed_checkpoint_fails_the_step_before_the_model_is_called() -> None:
    async with Harness([text_response("never asked")]) as h:

        async def refuse(_session: Session) -> None:
            raise OSError("disk full")

        h.ctx.on(SESSION_CHECKPOINT, refuse)
        agent = h.agent()
        agent.send([{"type": "text", "text": "hello"}])
        await agent.when_idle()
        assert h.model.requests == []
        (end,) = [to_json(event.data) for event in agent.session.events if event.type == "turn/end"]  # type: ignore[union-attr]
        assert end["reason"]["kind"] == "error"
        assert "disk full" in end["reason"]["message"]
