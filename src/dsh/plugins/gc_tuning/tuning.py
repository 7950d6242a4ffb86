"""The ``gc-tuning`` plugin: the cyclic garbage collector tuned for a process hosting many agents.

CPython's collector pauses the whole process while it scans. A young collection scans
the objects allocated since the last one; a full one scans every tracked object, which in
a process streaming a thousand answers at once is some 200,000 objects and over 100 ms:
every chunk in flight waits that long (``docs/scaling.md``, session 8 of
``docs/benchmarks.md``). Two changes shorten and thin out those pauses:

* **freeze** (default on): every object alive when the plugin starts moves to the
  collector's permanent generation (:func:`gc.freeze`), so no later collection scans it.
  Loaded last in a tree, that is the booted process: imported modules, classes, the
  services. Cyclic garbage among them is never reclaimed (a boot leaves little). The
  freeze is a constant-time list splice: nothing is scanned to do it.
* **thresholds** (default :data:`DEFAULT_THRESHOLDS`): a young collection waits for
  20,000 more tracked allocations than frees (CPython's default is 700), so transient
  objects (a chunk in flight) are promoted far less often. The middle generation is
  collected at every second young collection: what a burst of new agents leaves alive
  moves to the old generation in small scans while the burst is still starting, not in
  one scan of all of it seconds later. A full collection waits for 100 middle ones (and
  CPython's own rule: the old generation grew by a quarter), so none falls inside a
  stream of seconds; cyclic garbage that reached the old generation waits longer.

The collector is process-wide, so the state is too: while any ``gc-tuning`` is loaded,
the thresholds of the most recently loaded one apply; when the last one unloads the
thresholds the process had before the first are restored and the frozen objects return
to the oldest generation (:func:`gc.unfreeze`). A host embedding dsh that tunes the
collector itself should not load the plugin.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from dsh.kernel import Context

name = "gc-tuning"
inject: list[str] = []

DEFAULT_THRESHOLDS: tuple[int, int, int] = (20_000, 2, 100)
"""Generation 0, 1 and 2 thresholds (CPython's defaults: 700, 10, 10); measured in ``docs/benchmarks.md``, session 9."""


class Config(BaseModel):
    """``freeze`` (default true) and ``thresholds`` (three positive integers); see the module docstring."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    freeze: bool = True
    thresholds: tuple[PositiveInt, PositiveInt, PositiveInt] = Field(default=DEFAULT_THRESHOLDS)


class _Tunings:
    """The process-wide state: the loaded tunings, in load order, and what to restore after the last."""

    def __init__(self) -> None:
        self.active: list[Config] = []
        self.original: tuple[int, int, int] = gc.get_threshold()
        self.frozen = False

    def add(self, config: Config) -> Callable[[], None]:
        if not self.active:
            self.original = gc.get_threshold()
        self.active.append(config)
        gc.set_threshold(*config.thresholds)
        if config.freeze:
            gc.freeze()
            self.frozen = True

        def remove() -> None:
            self.active.remove(config)
            if self.active:
                gc.set_threshold(*self.active[-1].thresholds)
                return
            gc.set_threshold(*self.original)
            if self.frozen:
                gc.unfreeze()
                self.frozen = False

        return remove


TUNINGS = _Tunings()
"""The one state of this process (the collector is process-wide)."""


def apply(ctx: Context, config: Config) -> None:
    """Tune the collector until ``ctx``'s plugin unloads (see the module docstring)."""
    ctx.effect(lambda: TUNINGS.add(config), "gc-tuning")
