"""The slash-command vocabulary: what a command is, and a parsed command line.

A :class:`Command` is a human-facing direct action (``/compact``, ``/plan``): a front
end (``dsh chat``, an ACP editor) lists it and, when the user types ``/name args``,
runs its handler instead of sending the line to the model. Neither the line nor the
handler's reply is logged or shown to the model; a handler that changes durable state
does so through the service that owns it (which logs its own events).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeAlias

from msgspec import UNSET, Struct, UnsetType

CommandHandler: TypeAlias = Callable[[Any, str], Awaitable[str | None]]
"""``handler(agent, args)``: runs the command for ``agent`` (the target session's agent) with
the text after the name; resolves to the text shown back to the user, or None for nothing.
A raise is the command's failure (the front end shows it); it never reaches the model."""

NAME_PATTERN: Final = re.compile(r"[a-z][a-z0-9_-]*")
"""A command name: lowercase ASCII letters, digits, ``_`` and ``-``, starting with a letter."""

_LINE: Final = re.compile(r"/([a-z][a-z0-9_-]*)(?:\s+(.*))?", re.DOTALL)


class Command(Struct, frozen=True, kw_only=True):
    """One command: ``name`` (without the ``/``), a one-line ``description``, an optional
    input ``hint`` shown before arguments are typed, and its ``handler``.

    Immutable; the handler is a live callable, so this value is never serialized.
    """

    name: str
    description: str
    handler: CommandHandler
    hint: str | UnsetType = UNSET


class CommandCall(Struct, frozen=True):
    """A typed line that names a registered command: the command and the text after its name."""

    command: Command
    args: str


def parse_command_line(line: str) -> tuple[str, str] | None:
    """``(name, args)`` for a line ``/name`` or ``/name args``; None for any other line.

    The ``/`` must be the first character and the name must match :data:`NAME_PATTERN`,
    followed by whitespace or the end. ``args`` is the rest with surrounding whitespace
    removed (``""`` when there is none).
    """
    match = _LINE.fullmatch(line)
    if match is None:
        return None
    return match.group(1), (match.group(2) or "").strip()
