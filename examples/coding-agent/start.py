"""coding-agent: a terminal coding assistant whose only tool is bash (SPEC §16.3).

Run ``python <project>/examples/coding-agent/start.py`` from the directory the agent
should work in (its bash commands run there) and type a task. Before booting
``tree.yml`` it reads ``<project>/.env`` when there is one: ``KEY=VALUE`` lines
(``export`` prefixes, ``#`` comments and one pair of quotes around a value allowed)
set variables the environment does not set already; an unreadable file or a malformed
line is reported on stderr and skipped.

Variables: ``DEEPSEEK_API_KEY`` (required), ``DEEPSEEK_BASE_URL`` (another
OpenAI-compatible server), ``RESUME_SESSION_ID`` (continue a persisted session),
``DSH_SESSIONS_ROOT`` (where session logs go; default ``.sessions`` next to this file).

At end of input the ui-stdio plugin ends the process with status 0 once the agent is
idle again; the tree is disposed first (the ``finally`` below). A tree that fails to
load (no API key, for instance) exits 1 with the reason on stderr; Ctrl-C exits 130.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path

from dsh.kernel import Context, LoaderError, load_tree

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent.parent
TREE = HERE / "tree.yml"


def load_dotenv(path: Path) -> None:
    """Set the variables ``path`` defines that the environment leaves unset (see the module docstring).

    A missing file is fine. Never raises: problems are reported on stderr.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return
    except (OSError, UnicodeDecodeError) as error:
        print(f"coding-agent: cannot read {path}: {error}", file=sys.stderr)
        return
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        key, equals, value = line.partition("=")
        key, value = key.strip(), value.strip()
        if not equals or not key.isidentifier():
            print(f"coding-agent: {path}:{number}: not a KEY=VALUE line, skipped", file=sys.stderr)
            continue
        if len(value) >= 2 and value[0] in "'\"" and value[-1] == value[0]:
            value = value[1:-1]
        os.environ.setdefault(key, value)


async def run(tree: Path) -> int:
    """Boot ``tree`` and serve until ui-stdio exits the process; 1 if it cannot load."""
    root = Context()
    try:
        await load_tree(root, tree)
        await asyncio.Event().wait()  # ui-stdio ends the process (SystemExit) after end of input
    except LoaderError as error:
        print(f"coding-agent: {error}", file=sys.stderr)
        return 1
    finally:
        await root.dispose()
    return 0  # not reached: the wait above ends only by an exception


def main() -> int:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    load_dotenv(PROJECT / ".env")
    os.environ.setdefault("DSH_SESSIONS_ROOT", str(HERE / ".sessions"))
    try:
        return asyncio.run(run(TREE))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
