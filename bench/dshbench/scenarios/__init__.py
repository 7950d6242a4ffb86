"""The benchmark scenarios, in table order; each is ``async def run(plan) -> list[Metric]``."""

from collections.abc import Awaitable, Callable
from typing import TypeAlias

from dshbench.metrics import Metric
from dshbench.plan import Plan
from dshbench.scenarios import acp, chunks, cold_start, fleet, persistence, scale, steps

Scenario: TypeAlias = Callable[[Plan], Awaitable[list[Metric]]]

SCENARIOS: dict[str, Scenario] = {
    "cold-start": cold_start.run,
    "steps": steps.run,
    "chunks": chunks.run,
    "persistence": persistence.run,
    "scale": scale.run,
    "acp": acp.run,
    "fleet": fleet.run,
    "fleet-stream": fleet.run_streaming,
}

__all__ = ["SCENARIOS", "Scenario"]
