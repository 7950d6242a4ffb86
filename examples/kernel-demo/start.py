"""The kernel demo: boot tree.yml through the loader, show what started, dispose it all.

Run it with ``make run`` (or ``.venv/bin/python examples/kernel-demo/start.py``) from
anywhere; paths in the tree resolve against the tree file. ``DSH_DEMO_WHO`` picks
who is greeted.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from dsh.kernel import Context, PluginEntry, load_tree, parse_tree

TREE = Path(__file__).resolve().with_name("tree.yml")


def show(entries: list[PluginEntry] | tuple[PluginEntry, ...], depth: int = 1) -> None:
    for entry in entries:
        print(f"{'  ' * depth}{entry.id} ({entry.name})")
        show(entry.children, depth + 1)


async def main() -> None:
    print(f"tree {TREE.name}:")
    show(parse_tree(TREE))
    root = Context()
    fibers = await load_tree(root, TREE)
    print("booted: " + ", ".join(f"{fiber.name} ({fiber.state.value})" for fiber in fibers))
    await root.dispose()
    print("disposed: " + ", ".join(f"{fiber.name} ({fiber.state.value})" for fiber in fibers))


if __name__ == "__main__":
    asyncio.run(main())
