"""Token usage and cost of sessions, derived from their logs.

:func:`summarize_usage` sums the logged ``usage`` events per turn and per session
(input, output, cache-read, cache-write and reasoning tokens) and prices them with a
:class:`ModelPrice`; :data:`DEFAULT_PRICES` holds DeepSeek's published prices and
:data:`DEFAULT_CONTEXT_WINDOWS` its models' context windows.
Every front end reads usage through these names, so they all say the same.
"""

from dsh.core.usage.ledger import PER_PRICE_UNIT, SUBAGENT_END, cost_of, delegated_usage, own_start, summarize_usage
from dsh.core.usage.prices import DEFAULT_PRICES
from dsh.core.usage.types import ModelPrice, TokenTotals, TurnUsage, UsageSummary
from dsh.core.usage.windows import DEFAULT_CONTEXT_WINDOWS

__all__ = [
    "DEFAULT_CONTEXT_WINDOWS",
    "DEFAULT_PRICES",
    "PER_PRICE_UNIT",
    "SUBAGENT_END",
    "ModelPrice",
    "TokenTotals",
    "TurnUsage",
    "UsageSummary",
    "cost_of",
    "delegated_usage",
    "own_start",
    "summarize_usage",
]
