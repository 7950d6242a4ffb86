"""``invariants``: dev-mode assertions of the session-log contract and legal agent status
transitions, plus freezing of logged event data (SPEC §13).

This package is the plugin (a module plugin: ``name``, ``inject``, ``Config``,
``apply``); load it as ``dsh.plugins.invariants``. See :mod:`.plugin` for what it
checks and :mod:`.freeze` for the immutable containers it puts in the log.
"""

from dsh.core.errors import InvariantError
from dsh.plugins.invariants.freeze import FrozenDict, FrozenList, deep_freeze
from dsh.plugins.invariants.plugin import Config, apply, inject, name
from dsh.plugins.invariants.trace import SessionTrace, check_event

__all__ = [
    "Config",
    "FrozenDict",
    "FrozenList",
    "InvariantError",
    "SessionTrace",
    "apply",
    "check_event",
    "deep_freeze",
    "inject",
    "name",
]
