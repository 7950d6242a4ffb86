"""Slash commands in the chat: a typed ``/name [args]`` runs the command instead of a turn.

With the ``commands`` service in the tree, a line naming a registered command runs its
handler for the chat's agent (never sent to the model); the reply, or the failure, is
printed, then the prompt. ``/help`` (unless a plugin registered its own) lists the
commands. Lines naming no command (``/tmp is full``) go to the model as before, and
without the service nothing is a command. Commands run one at a time, in input order,
each as a task of the chat's fiber: the chat waits for them before it exits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from dsh.core.commands import COMMANDS, Command, CommandCall, parse_command_line
from dsh.kernel import Context


def help_text(commands: tuple[Command, ...]) -> str:
    """The ``/help`` listing: one line per command (``/name <hint>  description``)."""
    rows = [("/help", "list the commands")]
    for command in commands:
        hint = f" <{command.hint}>" if isinstance(command.hint, str) else ""
        rows.append((f"/{command.name}{hint}", command.description))
    width = max(len(name) for name, _ in rows)
    return "\n".join(f"{name.ljust(width)}  {description}" for name, description in rows)


class ChatCommands:
    """The chat's command runner: ``show`` prints a reply (None: no reply) and the prompt after it,
    ``agent`` gives the target agent (or None), ``on_done`` runs after each command (the chat may
    exit then)."""

    def __init__(
        self,
        ctx: Context,
        show: Callable[[str | None], None],
        agent: Callable[[], object | None],
        on_done: Callable[[], None],
    ) -> None:
        self._ctx = ctx
        self._show = show
        self._agent = agent
        self._on_done = on_done
        self._last: asyncio.Task[None] | None = None

    @property
    def busy(self) -> bool:
        """True while a command is still running."""
        last = self._last
        return last is not None and not last.done() and last is not asyncio.current_task()

    def dispatch(self, line: str) -> bool:
        """Run ``line`` when it is a command (then True)."""
        registry = self._ctx.get(COMMANDS)
        if registry is None:
            return False
        call = registry.match(line)
        if call is None:
            parsed = parse_command_line(line)
            if parsed is None or parsed[0] != "help":
                return False
        previous = self._last
        name = call.command.name if call is not None else "help"
        self._last = self._ctx.spawn(self._run(previous, call, registry.list()), f"chat command /{name}")
        return True

    async def _run(
        self, previous: asyncio.Task[None] | None, call: CommandCall | None, commands: tuple[Command, ...]
    ) -> None:
        if previous is not None:
            await asyncio.wait({previous})
        if call is None:
            self._show(help_text(commands))
        else:
            try:
                reply = await call.command.handler(self._agent(), call.args)
            except Exception as error:
                self._show(f"/{call.command.name} failed: {error}")
            else:
                self._show(reply or None)
        self._on_done()
