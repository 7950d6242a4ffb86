"""Print the ``FROZEN`` table of tests/test_public_api.py from the packages as they are now.

Run it after a deliberate change to a package's public names and paste the output
over the table; the diff then shows exactly which names were added or removed.
"""

from __future__ import annotations

import importlib
import pkgutil

import dsh


def packages() -> list[str]:
    names = ["dsh"]
    for info in pkgutil.walk_packages(dsh.__path__, "dsh."):
        if info.ispkg:
            names.append(info.name)
    return sorted(names)


def main() -> None:
    print("FROZEN: dict[str, list[str]] = {")
    for name in packages():
        module = importlib.import_module(name)
        exported = list(getattr(module, "__all__", []))
        print(f"    {name!r}: {exported!r},")
    print("}")


if __name__ == "__main__":
    main()
