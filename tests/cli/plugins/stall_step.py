"""A test plugin: every model answer waits in `agent/step-result` until the plugin is unloaded.

A cancel cannot end such a turn (the step-result waterfall is not raced against the
abort signal), which lets a test press Ctrl-C twice while a turn is stuck. The
plugin sets `REACHED[config.key]` once a step is stuck.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel

from dsh.core.agent import AGENT_STEP_RESULT
from dsh.kernel import Context

name = "stall-step"
REACHED: dict[str, asyncio.Event] = {}


class Config(BaseModel):
    key: str


def apply(ctx: Context, config: Config) -> None:
    release = asyncio.Event()
    ctx.effect(lambda: release.set, "release stalled steps")

    async def stall(_agent: Any, _turn: int, _step: int, _message: Any, next_: Callable[[], Awaitable[Any]]) -> Any:
        REACHED[config.key].set()
        await release.wait()
        return await next_()

    ctx.on(AGENT_STEP_RESULT, stall)
