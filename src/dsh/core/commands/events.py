"""The ``commands/*`` event catalog."""

from __future__ import annotations

from dsh.kernel import EmitEvent

COMMANDS_CHANGE: EmitEvent[[]] = EmitEvent(
    "commands/change",
    doc=(
        "Emitted (no arguments) after a command is registered or removed; read commands.list() "
        "for the new set. A listener that raises during registration makes it fail and be rolled back."
    ),
)
"""See ``doc``: emitted with no arguments whenever the set of commands changes."""
