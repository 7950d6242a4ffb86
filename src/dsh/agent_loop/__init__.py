"""The one concrete agent loop: ``AgentLoop`` (the agents factory), ``ReactLoopAgent``,
``Inbox`` and the driver (SPEC §8).

Modules: :mod:`.agent` (the handle), :mod:`.state` (the run state the handle and the
driver share, and the loop-wide :class:`LoopSettings`), :mod:`.loop` (turns),
:mod:`.step` (one model call and its tools), :mod:`.tool_calls` (a step's tool calls,
safe ones together), :mod:`.race` (racing work against the abort signal),
:mod:`.inbox`, :mod:`.service`.

Load ``AgentLoop`` as a plugin (YAML name ``dsh.agent_loop:AgentLoop``); nothing else
in dsh imports this package, so it can be replaced by another loop that speaks the
``dsh.core.agent`` vocabulary.
"""

from dsh.agent_loop.agent import ReactLoopAgent
from dsh.agent_loop.inbox import Inbox, InboxMessage
from dsh.agent_loop.loop import TurnRun, run_loop
from dsh.agent_loop.race import StepAbortedError, race_abort
from dsh.agent_loop.service import AGENT_LOOP, AgentLoop, AgentLoopConfig, ConfiguredAgent
from dsh.agent_loop.state import LoopSettings
from dsh.agent_loop.step import FinishError, run_step
from dsh.agent_loop.tool_calls import run_tool_calls

__all__ = [
    "AGENT_LOOP",
    "AgentLoop",
    "AgentLoopConfig",
    "ConfiguredAgent",
    "FinishError",
    "Inbox",
    "InboxMessage",
    "LoopSettings",
    "ReactLoopAgent",
    "StepAbortedError",
    "TurnRun",
    "race_abort",
    "run_loop",
    "run_step",
    "run_tool_calls",
]
