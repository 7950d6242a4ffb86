"""A child process for the crash test: a parent whose foreground sub-agent runs ``sleep 30``.

Usage: ``python crash_parent.py ROOT PIDFILE``. Once the sleeper runs and both logs are
flushed it prints ``ready <parent session> <child session>``; the test then kills it with
SIGKILL.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from dsh.core.agent import AgentOptions
from dsh.core.llm import text
from dsh.core.session import SESSION_FLUSH
from dsh.testing.harness import Harness
from dsh.testing.scripted import tool_call_response
from tests.plugins.subagent.helpers import boot, child_model, pid_of, sleeper


async def main(root: str, pidfile: str) -> None:
    script = [tool_call_response("c1", "subagent", {"description": "sleep", "prompt": "sleep", "model": "child"})]
    async with Harness(script) as h:
        service = await boot(h, Path(root))
        child_model(h, "child", tool_call_response("k1", "bash", {"command": sleeper(Path(pidfile))}))
        parent = h.loop.create("main", AgentOptions(model="mock"))
        parent.send([text("go")])
        await pid_of(Path(pidfile))
        (run,) = service.runs(parent)
        await h.ctx.parallel(SESSION_FLUSH, parent.session)
        await h.ctx.parallel(SESSION_FLUSH, run.child.session)
        print(f"ready {parent.session.id} {run.child.session.id}", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
