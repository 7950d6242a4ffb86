"""Errors a subcommand reports to the user instead of a traceback."""

from __future__ import annotations


class CliError(Exception):
    """A problem the user can fix; ``dsh`` prints ``dsh: <message>`` on stderr and exits ``status``.

    The message says what to change. ``status`` is 1 for a failed operation and 2 for
    a usage problem (as argparse does).
    """

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.status = status

    def __str__(self) -> str:
        return self.message


def report(error: CliError) -> int:
    """Print ``dsh: <message>`` on stderr and return the error's exit status."""
    import sys

    print(f"dsh: {error}", file=sys.stderr, flush=True)
    return error.status


KEY_LENGTH = 40
"""How much of an error text identifies it (see :class:`Once`)."""

SHORTEST_KEY = 12
"""Error texts shorter than this are too generic to identify a failure."""


class Once:
    """Say each failure once on stderr, however many layers report it.

    A failure often reaches the user through several reporters (the store's
    warning, the agent's flush warning, ``dsh run``'s error line, the disposer's
    error): each repeats the same error text after a prefix of its own. Every line
    :meth:`say` prints registers the start of each of its ``": "``-separated tails
    as a key; a later line that contains a key is a repeat and is dropped.
    """

    def __init__(self) -> None:
        self._keys: set[str] = set()

    def repeats(self, line: str) -> bool:
        """True when ``line`` repeats a failure already said."""
        return any(key in line for key in self._keys)

    def remember(self, line: str) -> None:
        """Register ``line``'s tails as said."""
        parts = line.split(": ")
        for index in range(1, len(parts)):
            tail = ": ".join(parts[index:])
            if len(tail) >= SHORTEST_KEY:
                self._keys.add(tail[:KEY_LENGTH])

    def say(self, line: str) -> bool:
        """Print ``dsh: <line>`` on stderr unless it repeats a failure already said; True when printed."""
        if self.repeats(line):
            return False
        self.remember(line)
        import sys

        print(f"dsh: {line}", file=sys.stderr, flush=True)
        return True


ONCE = Once()
"""The registry of this command (:func:`dsh.cli.boot.logging_to_stderr` starts it afresh)."""
