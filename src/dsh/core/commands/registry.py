"""The ``commands`` service: the slash commands front ends list and run.

Plugins register :class:`~dsh.core.commands.Command` values through their own context
(``ctx[COMMANDS].register(...)``); each registration is an effect of the calling
plugin's fiber, so unloading that plugin removes its commands. Every change emits
``commands/change`` (front ends refresh what they advertise). Dispatch is the front
end's: :meth:`CommandRegistry.match` tells whether a typed line names a command, and the
front end awaits the handler and shows its reply. A line that names no registered
command is not a command (the front end sends it to the model as before).
"""

from __future__ import annotations

from collections.abc import Generator

from dsh.core.commands.events import COMMANDS_CHANGE
from dsh.core.commands.types import NAME_PATTERN, Command, CommandCall, parse_command_line
from dsh.kernel import Context, Disposer, Effect, Service, ServiceKey


class CommandRegistry(Service):
    """Class plugin providing :data:`COMMANDS`; no config, no dependencies."""

    def __init__(self, ctx: Context, config: object = None) -> None:
        super().__init__(ctx, COMMANDS)
        self._commands: dict[str, Command] = {}

    def register(self, command: Command) -> Effect:
        """Register ``command`` until the returned effect (or the caller's fiber) is disposed.

        Raises ``ValueError`` for a bad name (see :data:`~dsh.core.commands.NAME_PATTERN`),
        an empty description or a name already taken, before changing anything. Emits
        ``commands/change`` after registering and after removal; a listener that raises
        during registration makes it fail and be rolled back.
        """
        name = command.name
        if NAME_PATTERN.fullmatch(name) is None:
            raise ValueError(
                f"command name {name!r} is invalid: use lowercase letters, digits, '_' and '-', "
                "starting with a letter, without the '/'"
            )
        if not command.description.strip():
            raise ValueError(f'command "/{name}" needs a description: say in one line what it does')
        commands = self._commands
        notify = self.own_ctx

        def body() -> Generator[Disposer, None, None]:
            if name in commands:
                raise ValueError(f'command "/{name}" is already registered')
            commands[name] = command

            def unregister() -> None:
                del commands[name]
                notify.emit(COMMANDS_CHANGE)

            yield unregister
            notify.emit(COMMANDS_CHANGE)

        return self.ctx.effect(body, f"command /{name}")

    def get(self, name: str) -> Command | None:
        """The command named ``name`` (without the ``/``), or None."""
        return self._commands.get(name)

    def list(self) -> tuple[Command, ...]:
        """Every registered command, sorted by name."""
        return tuple(sorted(self._commands.values(), key=lambda command: command.name))

    def match(self, line: str) -> CommandCall | None:
        """The registered command ``line`` invokes (``/name args``), or None when it invokes none."""
        parsed = parse_command_line(line)
        if parsed is None:
            return None
        command = self._commands.get(parsed[0])
        return None if command is None else CommandCall(command, parsed[1])


COMMANDS: ServiceKey[CommandRegistry] = ServiceKey("commands")
"""The slash-command service key."""
