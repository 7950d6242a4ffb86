"""Sub-agents start no wider than their parent: the ``subagent/spawn`` listener of the plugin.

Before a child agent is created, its options get the parent's current permission
state (mode, policy, plan mode, "always" grants) under
:data:`~dsh.core.approval.INHERITED_STATE`; the ``permissions`` service starts the
child's session from it and pins it at the child's first turn. The child's own
approval requests go to whoever answers for it: the ACP bridge and ``dsh chat``
answer only for the agents they own, so a child's question fails closed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace

from dsh.core.approval import INHERITED_STATE, PERMISSIONS
from dsh.core.subagent import SUBAGENT_SPAWN, SubagentSpawn
from dsh.kernel import Context


def narrow_children(ctx: Context) -> None:
    """Listen to ``subagent/spawn`` on behalf of ``ctx``'s fiber (see the module docstring)."""

    def on_spawn(spawn: SubagentSpawn, next: Callable[[], Awaitable[SubagentSpawn]]) -> Awaitable[SubagentSpawn]:
        state = ctx[PERMISSIONS].state(spawn.parent)
        spawn.options = replace(spawn.options, extra={**spawn.options.extra, INHERITED_STATE: state})
        return next()

    ctx.on(SUBAGENT_SPAWN, on_spawn, prepend=True)
