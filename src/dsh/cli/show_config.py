"""``dsh config [FILE]``: check the plugin tree that would boot, and print it.

The tree is FILE, else ``--config``, else the built-in profile the global options
select (printed even without an API key: the key is never part of it), in its
portable spelling: the default sessions root is written by its origin
(``${DSH_HOME}/sessions``, ...), so a saved tree follows the environment it later
boots in (see :mod:`dsh.cli.profile`). The check
(:func:`~dsh.cli.tree_check.check_tree`) parses, resolves and validates every
entry without starting anything. A valid tree is printed as YAML on stdout (a
file as it is written); with ``--check`` only a one-line verdict is printed.
Problems go to stderr, one per line, and the status is 1.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from dsh.cli.boot import PROFILE_FILE, write_profile
from dsh.cli.errors import CliError, report
from dsh.cli.profile import Tree, resolve_tree
from dsh.cli.settings import Settings
from dsh.cli.tree_check import TreeReport, check_tree


def check(tree: Tree) -> TreeReport:
    """Check ``tree``: its file, or a temporary copy of a built-in profile."""
    if tree.file is not None:
        return check_tree(tree.file)
    with tempfile.TemporaryDirectory(prefix="dsh-profile-") as folder:
        return check_tree(write_profile(tree, Path(folder) / PROFILE_FILE))


async def command(args: argparse.Namespace) -> int:
    """The ``config`` subcommand."""
    try:
        if args.file is not None:
            args.config = args.file
        tree = resolve_tree(Settings.from_args(args), need_key=False, portable=True)
    except CliError as error:
        return report(error)
    verdict = check(tree)
    if not verdict.ok:
        for problem in verdict.problems:
            print(f"dsh: {problem}", file=sys.stderr)
        print(f"dsh: {tree.label} has {len(verdict.problems)} problem(s)", file=sys.stderr)
        return 1
    if args.check:
        print(f"{tree.label}: ok ({verdict.plugins} plugins)")
    else:
        sys.stdout.write(tree.text if tree.text.endswith("\n") else tree.text + "\n")
    return 0
