"""A child process for the crash test: an agent with JSONL persistence streaming long turns.

Usage: ``python crash_agent.py ROOT SESSION_ID TURNS`` (ROOT: a JSONL directory, or
``postgresql://...#SCHEMA`` for the PostgreSQL backend with a one-second lease). After every checkpoint it prints
``flushed <count> <sha256>``: the number of events now durable and a digest of their
JSONL lines, so the parent can prove that nothing committed was lost or rewritten.
The parent kills it with SIGKILL at a random moment.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
from typing import Any

from dsh.core.agent import AGENT_STEP_END, AgentOptions, CreateAgentOptions
from dsh.core.llm import text
from dsh.core.session import SESSION_FLUSH, session_event_line
from dsh.core.tools import define_tool
from dsh.plugins.persistence_jsonl import SessionPersistenceJsonl
from dsh.plugins.persistence_postgres import SessionPersistencePostgres
from dsh.testing.harness import Harness
from dsh.testing.scripted import ScriptedModel, text_response, tool_call_response


def digest(events: Any, count: int) -> str:
    hasher = hashlib.sha256()
    for event in list(events)[:count]:
        hasher.update(session_event_line(event).encode())
    return hasher.hexdigest()


def script(turns: int) -> list[Any]:
    entries: list[Any] = []
    for turn in range(turns):
        entries.append(tool_call_response(f"call-{turn}", "note", {"n": turn}))
        entries.append(text_response(f"turn {turn} " + "streamed text " * 40))
    return entries


async def main(root: str, session_id: str, turns: int) -> None:
    async with Harness() as h:
        if root.startswith("postgresql://"):
            url, _, schema = root.partition("#")
            await h.ctx.plugin(SessionPersistencePostgres, {"url": url, "pg_schema": schema, "lease_s": 1})
        else:
            await h.ctx.plugin(SessionPersistenceJsonl, {"root": root})
        h.llm.register_adapter(["paced"], ScriptedModel(script(turns), pace=0.0003))

        async def note(args: dict[str, Any], _exec: Any) -> list[Any]:
            await asyncio.sleep(0.002)
            return [text(f"noted {args['n']}")]

        h.tools.register(
            define_tool(name="note", description="Take a note.", parameters={"n": {"type": "number"}}, execute=note)
        )
        agent = h.agents.create(
            CreateAgentOptions(agent_id="crash", session_id=session_id, agent_options=AgentOptions(model="paced"))
        )

        async def checkpoint() -> None:
            count = len(agent.session.events)
            await h.ctx.parallel(SESSION_FLUSH, agent.session)
            print(f"flushed {count} {digest(agent.session.events, count)}", flush=True)

        pending: set[asyncio.Task[None]] = set()

        def on_step_end(*_args: Any) -> None:
            task = asyncio.ensure_future(checkpoint())
            pending.add(task)
            task.add_done_callback(pending.discard)

        h.ctx.on(AGENT_STEP_END, on_step_end)
        print("ready", flush=True)
        for turn in range(turns):
            agent.send([text(f"please work on item {turn}")])
            await agent.when_idle()
            await asyncio.sleep(0.001)
        await checkpoint()
        while pending:
            await asyncio.gather(*list(pending))
    print("done", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
