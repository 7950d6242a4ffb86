"""The agent interface: the ``Agent`` protocol, the ``agents`` registry with its factory
seam, and the ``agent/*`` event catalog (SPEC §7).

Everything that drives or watches agents codes against these names; the concrete loop
(``dsh.agent_loop``) implements them and installs itself as the factory.
"""

from dsh.core.agent.events import (
    AGENT_CREATED,
    AGENT_DISPOSED,
    AGENT_ERROR,
    AGENT_QUEUED,
    AGENT_REQUEST,
    AGENT_REQUEST_ERROR,
    AGENT_RETRY,
    AGENT_STATUS,
    AGENT_STEERING,
    AGENT_STEP_END,
    AGENT_STEP_RESULT,
    AGENT_STEP_START,
    AGENT_STREAM_CHUNK,
    AGENT_TURN_CONTINUATION,
    AGENT_TURN_END,
    AGENT_TURN_START,
)
from dsh.core.agent.registry import AGENTS, AgentRegistry
from dsh.core.agent.types import (
    Agent,
    AgentFactory,
    AgentId,
    AgentOptions,
    AgentStatus,
    CreateAgentOptions,
    EndTurn,
    QueuedInfo,
    RequestFailure,
    ResumeAgentOptions,
    RetryNotice,
)

__all__ = [
    "AGENTS",
    "AGENT_CREATED",
    "AGENT_DISPOSED",
    "AGENT_ERROR",
    "AGENT_QUEUED",
    "AGENT_REQUEST",
    "AGENT_REQUEST_ERROR",
    "AGENT_RETRY",
    "AGENT_STATUS",
    "AGENT_STEERING",
    "AGENT_STEP_END",
    "AGENT_STEP_RESULT",
    "AGENT_STEP_START",
    "AGENT_STREAM_CHUNK",
    "AGENT_TURN_CONTINUATION",
    "AGENT_TURN_END",
    "AGENT_TURN_START",
    "Agent",
    "AgentFactory",
    "AgentId",
    "AgentOptions",
    "AgentRegistry",
    "AgentStatus",
    "CreateAgentOptions",
    "EndTurn",
    "QueuedInfo",
    "RequestFailure",
    "ResumeAgentOptions",
    "RetryNotice",
]
