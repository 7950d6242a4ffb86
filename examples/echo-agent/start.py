"""echo-agent: a keyless chat with a stand-in model and one tool (SPEC §16.2).

Run ``python <project>/examples/echo-agent/start.py`` from any directory and type
lines; ``echo <text>`` makes the model call the ``echo`` tool. It boots ``tree.yml``
through the loader (plugin paths resolve against the tree file). Session logs go to
``$DSH_SESSIONS_ROOT``, by default ``.sessions`` next to this file.

At end of input (Ctrl-D, or the end of a pipe) the ui-stdio plugin ends the process
with status 0 once the agent has finished what it was given: its ``SystemExit`` stops
the loop, and the ``finally`` below disposes the whole tree first. A tree that fails to
load exits 1 with the reason on stderr; Ctrl-C exits 130. Logs go to stderr.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path

from dsh.kernel import Context, LoaderError, load_tree

HERE = Path(__file__).resolve().parent
TREE = HERE / "tree.yml"


async def run(tree: Path) -> int:
    """Boot ``tree`` and serve until ui-stdio exits the process; 1 if it cannot load."""
    root = Context()
    try:
        await load_tree(root, tree)
        await asyncio.Event().wait()  # ui-stdio ends the process (SystemExit) after end of input
    except LoaderError as error:
        print(f"echo-agent: {error}", file=sys.stderr)
        return 1
    finally:
        await root.dispose()
    return 0  # not reached: the wait above ends only by an exception


def main() -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    os.environ.setdefault("DSH_SESSIONS_ROOT", str(HERE / ".sessions"))
    try:
        return asyncio.run(run(TREE))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
