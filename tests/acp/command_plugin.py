"""A module plugin registering ``/whoami`` (the SDK tests load it by dotted name in a tree)."""

from __future__ import annotations

from typing import Any

from dsh.core.commands import COMMANDS, Command
from dsh.kernel import Context

name = "test-commands"
inject = [COMMANDS.name]


async def whoami(agent: Any, args: str) -> str:
    return f"session {agent.session.id} says {args}"


def apply(ctx: Context, config: object) -> None:
    ctx[COMMANDS].register(Command(name="whoami", description="name the session", handler=whoami, hint="words"))
