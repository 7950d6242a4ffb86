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
    """The chat's command runner: ``write`` prints, ``agent`` gives the target agent (or None),
    ``on_done`` runs after each command (the chat may exit then)."""

    def __init__(
        self,
        ctx: Context,
        write: Callable[[str], None],
        agent: Callable[[], object | None],
        on_done: Callable[[], None],
    ) -> None:
        self._ctx = ctx
        self._write = write
        self._agent = agent
        self._on_done = on_done
        self._last: asyncio.Task[None] | None = None

    @property
    def busy(self) -> bool:
        """True while a command is still running."""
        last = self._last
        return last is not None and not last.done() and last is not asyncio.current_task()

    async def wait(self) -> None:
        """Return once every command dispatched so far has finished."""
        if self._last is not None:
            await asyncio.wait({self._last})

    def dispatch(self, line: str, prompt: str) -> bool:
        """Run ``line`` when it is a command (then True; ``prompt`` is printed after its reply)."""
        registry = self._ctx.get(COMMANDS)
        if registry is None:
            return False
        call = registry.match(line)
        if call is None:
            parsed = parse_command_line(line)
            if parsed is None or parsed[0] != "help":
                return False
            self._write(help_text(registry.list()) + "\n" + prompt)
            return True
        previous = self._last
        self._last = self._ctx.spawn(self._run(previous, call, prompt), f"chat command /{call.command.name}")
        return True

    async def _run(self, previous: asyncio.Task[None] | None, call: CommandCall, prompt: str) -> None:
        if previous is not None:
            await asyncio.wait({previous})
        try:
            reply = await call.command.handler(self._agent(), call.args)
        except Exception as error:
            self._write(f"/{call.command.name} failed: {error}\n{prompt}")
        else:
            self._write(f"{reply}\n{prompt}" if reply else prompt)
        self._on_done()
