"""``gc-tuning``: the garbage collector tuned for a process hosting many agents.

A module plugin (``dsh.plugins.gc_tuning``, YAML name ``gc-tuning``); config ``freeze``
and ``thresholds``. Load it last in a tree: it freezes what the plugins before it built.
See :mod:`dsh.plugins.gc_tuning.tuning`.
"""

from __future__ import annotations

from dsh.plugins.gc_tuning.tuning import DEFAULT_THRESHOLDS, TUNINGS, Config, apply, inject, name

__all__ = ["DEFAULT_THRESHOLDS", "TUNINGS", "Config", "apply", "inject", "name"]
