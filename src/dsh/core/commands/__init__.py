"""The ``commands`` core service: slash commands that front ends list and run directly
(never sent to the model), registered by plugins as effects of their fibers."""

from dsh.core.commands.events import COMMANDS_CHANGE
from dsh.core.commands.registry import COMMANDS, CommandRegistry
from dsh.core.commands.types import NAME_PATTERN, Command, CommandCall, CommandHandler, parse_command_line

__all__ = [
    "COMMANDS",
    "COMMANDS_CHANGE",
    "NAME_PATTERN",
    "Command",
    "CommandCall",
    "CommandHandler",
    "CommandRegistry",
    "parse_command_line",
]
