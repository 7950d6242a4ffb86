"""Sub-agents: a parent agent starts child agents on sessions of their own (the seam).

:mod:`.types` holds the vocabulary (the ``subagent/start`` and ``subagent/end`` log
events, requests, results, progress), :mod:`.events` the ``subagent/spawn`` and
``subagent/progress`` kernel events, :mod:`.runtime` the ``subagents`` service
interface that ``dsh.plugins.subagent`` implements.
"""

from dsh.core.subagent.events import SUBAGENT_PROGRESS, SUBAGENT_SPAWN
from dsh.core.subagent.runtime import DELEGATION_TOOLS, SUBAGENTS, SubagentRun, Subagents
from dsh.core.subagent.types import (
    SubagentEndData,
    SubagentEndEvent,
    SubagentOutcome,
    SubagentProgress,
    SubagentRequest,
    SubagentResult,
    SubagentSpawn,
    SubagentStartData,
    SubagentStartEvent,
    SubagentStatus,
)

__all__ = [
    "DELEGATION_TOOLS",
    "SUBAGENTS",
    "SUBAGENT_PROGRESS",
    "SUBAGENT_SPAWN",
    "SubagentEndData",
    "SubagentEndEvent",
    "SubagentOutcome",
    "SubagentProgress",
    "SubagentRequest",
    "SubagentResult",
    "SubagentRun",
    "SubagentSpawn",
    "SubagentStartData",
    "SubagentStartEvent",
    "SubagentStatus",
    "Subagents",
]
