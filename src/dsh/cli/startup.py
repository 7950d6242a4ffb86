"""Start-up trimming for the ``dsh`` process: imports a command never uses are not paid for.

``import httpx`` (which the DeepSeek adapter needs) also imports httpx's own
command-line tool, ``httpx._main``, and with it click, rich and pygments whenever
they are installed (rich is, for ``dsh chat``): some 20-30 ms of every ``dsh run``
before the first request. :func:`defer_httpx_cli` registers a stand-in
``httpx._main`` whose ``main`` imports the real tool on its first call, so httpx
itself is unchanged and its tool still works if something runs it.

This mutates the process's module table, so only the console entry point
(:func:`dsh.cli.main.main`, which owns the process) calls it, before anything
imports httpx.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import MutableMapping
from types import ModuleType
from typing import Any

HTTPX_CLI = "httpx._main"
"""The module httpx imports its command-line tool from."""


def defer_httpx_cli(modules: MutableMapping[str, ModuleType] | None = None) -> bool:
    """Make a later ``import httpx`` skip importing its command-line tool; True when done now.

    ``modules`` is the module table (default ``sys.modules``). Nothing changes (False)
    once httpx or its tool is imported. The stand-in's ``main(*args, **kwargs)``
    removes itself from ``modules``, imports the real tool and calls its ``main``.
    """
    table = sys.modules if modules is None else modules
    if "httpx" in table or HTTPX_CLI in table:
        return False
    stand_in = ModuleType(HTTPX_CLI, "Stand-in for httpx's command-line tool; imports it when first called.")

    def main(*args: Any, **kwargs: Any) -> Any:
        if table.get(HTTPX_CLI) is stand_in:
            del table[HTTPX_CLI]
        return importlib.import_module(HTTPX_CLI).main(*args, **kwargs)

    stand_in.main = main  # type: ignore[attr-defined]
    table[HTTPX_CLI] = stand_in
    return True
