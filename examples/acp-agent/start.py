"""acp-agent: dsh as an Agent Client Protocol server on stdin/stdout (SPEC §16.4).

Run it as ``python <project>/examples/acp-agent/start.py`` from any directory (an
editor launches it with the workspace as cwd). It boots a YAML tree through the
loader from the project root (a relative path in a tree is relative to its file: the
default sessions root is ``<project>/.sessions``):

* ``DSH_SNAPSHOT=replay`` -> ``snapshot.yml``: no provider and no key; the model is
  the recorded log ``$DSH_SNAPSHOT_FILE`` (or the ``$DSH_SNAPSHOT_OVERRIDE`` script).
  ``.env`` is never read, so a stray key can never cause a live call.
* otherwise -> ``tree.yml`` (the live DeepSeek model; also the snapshot record tree)
  after loading ``<project>/.env`` when present. Variables already set win; a
  malformed ``.env`` is reported on stderr and skipped.

``DSH_SNAPSHOT_SESSIONS_ROOT`` moves the session logs. Relative paths in the
``DSH_SNAPSHOT_*`` variables are taken relative to the launch directory.

stdout carries nothing but ACP frames: logs go to stderr, and once the tree is up the
process's stdout descriptor is pointed at stderr (the bridge writes through its own
duplicate), so a stray print can never corrupt the protocol. When the client closes
stdin (in every mode, as the snapshot harness relies on when ``DSH_SNAPSHOT`` is set)
or on SIGTERM/SIGINT, the whole tree is disposed (sessions settle, persistence
flushes) and the process exits 0. A tree that fails to load exits 1 with the reason
on stderr.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

from dsh.acp import AcpBridge
from dsh.kernel import Context, LoaderError, load_tree

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent.parent
PATH_VARIABLES = ("DSH_SNAPSHOT_FILE", "DSH_SNAPSHOT_OVERRIDE", "DSH_SNAPSHOT_SESSIONS_ROOT")


def load_dotenv(path: Path) -> None:
    """Set ``KEY=VALUE`` lines of ``path`` that the environment does not set yet.

    Blank lines, ``#`` comments and an ``export`` prefix are allowed; one pair of
    matching quotes around a value is removed. A missing file is fine; any other
    problem is reported on stderr and never stops the start.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return
    except (OSError, UnicodeDecodeError) as error:
        print(f"acp-agent: cannot read {path}: {error}", file=sys.stderr)
        return
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.removeprefix("export ").partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key.isidentifier():
            print(f"acp-agent: {path}:{number}: expected KEY=VALUE, skipped", file=sys.stderr)
            continue
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        os.environ.setdefault(key, value)


def find_bridge(root: Context) -> AcpBridge:
    """The ACP bridge the loaded tree started (the fiber instance of its ``acp`` plugin)."""
    for fiber in root.fiber.descendants():
        if isinstance(fiber.instance, AcpBridge):
            return fiber.instance
    raise LoaderError("the tree started no acp plugin: add an entry with name acp")


async def serve(tree: Path) -> int:
    """Boot ``tree``, serve until stdin closes or a stop signal arrives, dispose; the exit status."""
    root = Context()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(number, stop.set)
    try:
        await load_tree(root, tree)
        bridge = find_bridge(root)
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # the bridge keeps its own duplicate
        closed = asyncio.ensure_future(bridge.wait_closed())
        stopped = asyncio.ensure_future(stop.wait())
        await asyncio.wait({closed, stopped}, return_when=asyncio.FIRST_COMPLETED)
        closed.cancel()
        stopped.cancel()
    except LoaderError as error:
        print(f"acp-agent: {error}", file=sys.stderr)
        return 1
    finally:
        await root.dispose()
    return 0


def main() -> int:
    """Pick the tree from ``DSH_SNAPSHOT`` (see the module docstring), run from the project root; the exit status."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    for variable in PATH_VARIABLES:
        value = os.environ.get(variable)
        if value:
            os.environ[variable] = os.path.abspath(value)
    if os.environ.get("DSH_SNAPSHOT") == "replay":
        tree = HERE / "snapshot.yml"
    else:
        load_dotenv(PROJECT / ".env")
        tree = HERE / "tree.yml"
    os.chdir(PROJECT)
    return asyncio.run(serve(tree))


if __name__ == "__main__":
    sys.exit(main())
