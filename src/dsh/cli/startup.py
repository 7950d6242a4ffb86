"""Start-up trimming for the ``dsh`` process: imports a command never uses are not paid for.

``import httpx`` (which the OpenAI SDK behind ``llm-openai`` needs) also imports httpx's own
command-line tool, ``httpx._main``, and with it click, rich and pygments whenever
they are installed (rich is, for ``dsh chat``): some 20-30 ms of every run on that
profile before its first request. :func:`defer_httpx_cli` registers a stand-in
``httpx._main`` whose ``main`` imports the real tool on its first call, so httpx
itself is unchanged and its tool still works if something runs it.

This mutates the process's module table, so only the console entry point
(:func:`dsh.cli.main.main`, which owns the process) calls it, before anything
imports httpx.

The cyclic garbage collector is the other start-up cost: importing and booting
allocate some 80,000 long-lived objects, and every full collection walks them all
again (about 15-20 ms of start-up), as does the collection at interpreter exit
(about 50 ms). :class:`CollectorPolicy` pauses the collector while the process
starts, moves everything alive after the boot into the permanent generation
(``gc.freeze``) and turns collection back on, and freezes again before exit. Only
the console script (:func:`dsh.cli.main.console`) uses it: it changes process-wide
state, so ``main()`` called in-process (tests, embedders) leaves the collector alone.
"""

from __future__ import annotations

import gc
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


class CollectorPolicy:
    """The process's garbage-collector schedule around start-up and exit (see the module docstring).

    :meth:`pause` (at process start) disables automatic collection; :meth:`settle`
    (once the plugins are booted) freezes every object alive now and re-enables
    collection, so later collections never walk the start-up objects; :meth:`finish`
    (just before the process exits) freezes again so the exit skips walking them too.
    ``settle`` and ``finish`` do nothing unless ``pause`` ran, so code that boots
    in-process (tests, embedders) never changes the collector. ``collector`` is the
    ``gc`` module (injectable for tests).
    """

    def __init__(self, collector: Any = gc) -> None:
        self._gc = collector
        self._owned = False
        self._paused = False

    def pause(self) -> None:
        """Stop automatic collection until :meth:`settle`."""
        self._owned = self._paused = True
        self._gc.disable()

    def settle(self) -> None:
        """Freeze what start-up left alive and collect normally again (only while paused)."""
        if self._paused:
            self._paused = False
            self._gc.freeze()
            self._gc.enable()

    def finish(self) -> None:
        """Freeze everything before exit so the final collection does not walk it (only after :meth:`pause`)."""
        if self._owned:
            self.settle()
            self._gc.freeze()


COLLECTOR = CollectorPolicy()
"""The policy of this process: :func:`dsh.cli.main.console` pauses it, :func:`dsh.cli.boot.booted` settles it."""
