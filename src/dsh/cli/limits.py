"""``--max-turns``: how many turns a headless ``dsh run`` lets its agent run.

Every turn of the agent counts, whatever started it: the prompt's own, and any a
plugin queued after it (a continuation of the work, a follow-up message, steering
left over when a turn ended). When the last allowed turn ends, the agent is
cancelled, which drops whatever input is still queued, so no further turn starts;
input queued after that (by a later ``agent/turn-end`` listener, say) is dropped the
same way. :attr:`TurnBudget.stopped` then says that the limit cut the run short: it
is True only when input was actually dropped, so a run that simply ends within its
limit is not reported as cut off.
"""

from __future__ import annotations

from collections.abc import Sequence

from dsh.core.agent import AGENT_QUEUED, AGENT_STEERING, AGENT_TURN_END, AGENT_TURN_START, Agent, QueuedInfo
from dsh.core.llm import ContentBlock, MessageSource
from dsh.core.session import TurnEndReason
from dsh.kernel import Context

MAX_TURNS_REASON = "max turns"
"""The cancel reason when ``--max-turns`` stops the agent."""


class TurnBudget:
    """Counts ``agent``'s turns and stops it after ``limit`` (see the module docstring).

    The listeners are registered on ``ctx`` and live as long as its fiber.
    """

    def __init__(self, ctx: Context, agent: Agent, limit: int) -> None:
        self.agent = agent
        self.limit = limit
        self.turns = 0
        """Turns started so far."""
        self.exhausted = False
        """The last allowed turn has ended."""
        self.stopped = False
        """Input was dropped because the limit was reached."""
        self._queued = 0  # messages waiting for the next turn
        self._steering = 0  # steering not yet taken into a step
        ctx.on(AGENT_TURN_START, self._on_turn_start)
        ctx.on(AGENT_TURN_END, self._on_turn_end)
        ctx.on(AGENT_QUEUED, self._on_queued)
        ctx.on(AGENT_STEERING, self._on_steering)

    def _stop(self) -> None:
        self.stopped = True
        self._queued = self._steering = 0
        self.agent.cancel(MAX_TURNS_REASON)

    def _on_turn_start(self, agent: Agent, _turn: int) -> None:
        if agent is self.agent:
            self.turns += 1
            self._queued = 0

    def _on_turn_end(self, agent: Agent, _turn: int, _reason: TurnEndReason) -> None:
        if agent is self.agent and self.turns >= self.limit:
            self.exhausted = True
            if self._queued or self._steering:
                self._stop()

    def _on_queued(self, agent: Agent, _content: Sequence[ContentBlock], info: QueuedInfo) -> None:
        if agent is not self.agent:
            return
        if self.exhausted:
            self._stop()
        elif info.steering:
            self._steering += 1
        else:
            self._queued += 1

    def _on_steering(self, agent: Agent, _turn: int, _content: Sequence[ContentBlock], _source: MessageSource) -> None:
        if agent is self.agent and self._steering:
            self._steering -= 1
