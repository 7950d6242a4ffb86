"""The one concrete agent loop: ``AgentLoop`` (the agents factory), ``ReactLoopAgent``,
``Inbox`` and the driver (SPEC §8).

Load ``AgentLoop`` as a plugin (YAML name ``dsh.agent_loop:AgentLoop``); nothing else
in dsh imports this package, so it can be replaced by another loop that speaks the
``dsh.core.agent`` vocabulary.
"""

from dsh.agent_loop.agent import ReactLoopAgent
from dsh.agent_loop.inbox import Inbox, InboxMessage
from dsh.agent_loop.loop import FinishError, StepAbortedError, TurnRun, race_abort, run_loop, run_step
from dsh.agent_loop.service import AGENT_LOOP, AgentLoop, AgentLoopConfig, ConfiguredAgent

__all__ = [
    "AGENT_LOOP",
    "AgentLoop",
    "AgentLoopConfig",
    "ConfiguredAgent",
    "FinishError",
    "Inbox",
    "InboxMessage",
    "ReactLoopAgent",
    "StepAbortedError",
    "TurnRun",
    "race_abort",
    "run_loop",
    "run_step",
]
