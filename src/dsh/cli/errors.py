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
