"""The ``subagent/*`` kernel events: one extension point before a child starts, one for its progress."""

from __future__ import annotations

from collections.abc import Awaitable

from dsh.core.agent import Agent
from dsh.core.subagent.types import SubagentProgress, SubagentSpawn
from dsh.kernel import EmitEvent, WaterfallEvent

SUBAGENT_SPAWN: WaterfallEvent[[SubagentSpawn], Awaitable[SubagentSpawn]] = WaterfallEvent(
    "subagent/spawn",
    doc="""waterfall ``(spawn, next) -> Awaitable[SubagentSpawn]`` before a child is created.

    The hook for policy over children: a permissions plugin narrows the child here
    (its mode and approvals in ``spawn.options.extra``, fewer ``spawn.tools``) so that
    it can only be narrower than its parent; a listener that raises refuses the
    spawn (nothing is created, the error reaches the caller, a tool call gets an
    error result). Listeners must return what ``next()`` returns unless they own the
    decision, and must not add tools the parent may not use (refused afterwards).
    """,
)
"""See ``doc``: ``(spawn, next) -> Awaitable[SubagentSpawn]``."""

SUBAGENT_PROGRESS: EmitEvent[[Agent, SubagentProgress]] = EmitEvent(
    "subagent/progress",
    doc="""emit ``(parent, progress)``: a child of ``parent`` started a tool call or logged an
    assistant message (see :class:`SubagentProgress`).

    For front ends: the ACP bridge shows it inside the parent's tool card for
    ``progress.call_id`` (a ``tool_call_update`` whose content is the child's latest
    title or text). Emitted only while children run; a raising listener is logged
    and does not disturb the child.
    """,
)
"""See ``doc``: ``(parent, progress)``."""
