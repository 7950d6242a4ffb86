"""Slash commands over ACP: ``available_commands_update`` and prompts that run a command.

With the ``commands`` service in the tree, every session is told the registered
commands (``available_commands_update``) once it is opened (when there are any) and
again whenever the set changes (``commands/change``, an empty set included). A
``session/prompt`` whose text is ``/name [args]`` for a registered command runs that
command's handler instead of a turn: nothing is logged or sent to the model, the
handler's reply (if any) comes back as one ``agent_message_chunk``, and the prompt
answers ``end_turn``. A handler that raises fails the prompt with ``-32603`` naming the
command. Any other ``/text`` (an unknown command) is an ordinary prompt, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dsh.acp.rpc import internal_error
from dsh.core.commands import Command, CommandCall


def available_commands_update(commands: Sequence[Command]) -> dict[str, Any]:
    """The ``available_commands_update`` listing ``commands`` (ACP ``AvailableCommand`` each)."""
    listed: list[dict[str, Any]] = []
    for command in commands:
        entry: dict[str, Any] = {"name": command.name, "description": command.description}
        if isinstance(command.hint, str):
            entry["input"] = {"hint": command.hint}
        listed.append(entry)
    return {"sessionUpdate": "available_commands_update", "availableCommands": listed}


async def run_command(call: CommandCall, agent: object) -> dict[str, Any] | None:
    """Run ``call`` for ``agent``; the ``agent_message_chunk`` of its reply (None: no reply)."""
    try:
        reply = await call.command.handler(agent, call.args)
    except Exception as error:
        raise internal_error(f"/{call.command.name} failed: {error}") from error
    if not reply:
        return None
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": reply}}
