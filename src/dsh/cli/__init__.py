"""The ``dsh`` command: ``main(argv)`` is the console entry point, ``amain(argv)`` its in-loop form.

Subcommands: ``run`` (one prompt, headless), ``chat`` (interactive), ``acp`` (the
Agent Client Protocol on stdio), ``sessions`` (list, show, rm) and ``config`` (check
and print the plugin tree). Each lives in its own module, imported only when used.
"""

from dsh.cli.main import amain, build_parser, main

__all__ = ["amain", "build_parser", "main"]
