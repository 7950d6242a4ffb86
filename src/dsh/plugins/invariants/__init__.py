"""``invariants``: dev-mode assertions of the session-log contract and legal agent status
transitions (SPEC §13).

This package is the plugin (a module plugin: ``name``, ``inject``, ``Config``,
``apply``); load it as ``dsh.plugins.invariants``. See :mod:`.plugin` for what it
checks and :mod:`.trace` for the per-session rules. Logged events are immutable
values, so there is nothing to freeze.
"""

from dsh.core.errors import InvariantError
from dsh.plugins.invariants.plugin import Config, apply, inject, name
from dsh.plugins.invariants.trace import SessionTrace, check_event

__all__ = [
    "Config",
    "InvariantError",
    "SessionTrace",
    "apply",
    "check_event",
    "inject",
    "name",
]
