"""``budget``: a cost budget per session that ends a turn with reason ``max-cost``.

This package is the plugin (a module plugin: ``name``, ``inject``, ``Config``,
``apply``); load it as ``dsh.plugins.budget`` (entry point ``budget``). See
:mod:`.plugin`.
"""

from dsh.plugins.budget.plugin import Config, PriceConfig, apply, inject, name

__all__ = ["Config", "PriceConfig", "apply", "inject", "name"]
