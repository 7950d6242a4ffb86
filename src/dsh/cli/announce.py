"""When ``dsh run`` says which session it writes.

A printed session id must name a stored session: a user who copies it after a crash
resumes it. A stored (resumed or forked) session is announced at once; a new one only
once its log holds the turn's first events, which the loop checkpoints before every
model request: at the agent's first ``agent/request``, or at the end of a turn that
made none. A process killed before that leaves neither a log nor an id behind.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from dsh.core.agent import AGENT_REQUEST, AGENT_TURN_END, Agent
from dsh.core.llm import GenerateOptions
from dsh.core.session import TurnEndReason
from dsh.kernel import Context


def announce_session(root: Context, agent: Agent, say: Callable[[str], None], *, new: bool) -> None:
    """Call ``say("session <id>")`` once for ``agent``'s session, as the module docstring says.

    The listeners belong to ``root``'s fiber and stop listening once the id is said.
    """
    line = f"session {agent.session.id}"
    if not new:
        say(line)
        return

    def said() -> None:
        request()
        turn_end()
        say(line)

    def on_request(
        source: Agent, _turn: int, _step: int, options: GenerateOptions, next: Callable[[], Awaitable[GenerateOptions]]
    ) -> Awaitable[GenerateOptions]:
        if source is agent:
            said()
        return next()

    def on_turn_end(source: Agent, _turn: int, _reason: TurnEndReason) -> None:
        if source is agent:
            said()

    request = root.on(AGENT_REQUEST, on_request)
    turn_end = root.on(AGENT_TURN_END, on_turn_end)
