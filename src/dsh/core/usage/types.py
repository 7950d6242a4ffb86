"""The usage and cost vocabulary: token totals, a model's prices, a session's summary.

Immutable values (frozen ``msgspec.Struct``\\ s, camelCase on the wire), built by
:func:`~dsh.core.usage.ledger.summarize_usage` from the logged ``usage`` events and
shared by every front end (``dsh sessions show``, ``dsh run --json``, a budget plugin).
Money is in US dollars, as a float; a cost is ``UNSET`` when no price was given.
"""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType

from dsh.core.llm.types import Count, TokenUsage


class TokenTotals(Struct, frozen=True, kw_only=True, rename="camel"):
    """Summed token counts, disjoint as in :class:`~dsh.core.llm.TokenUsage`.

    ``input_tokens`` is uncached input (a cache miss), ``cache_read_tokens`` input served
    from the provider's cache, ``cache_write_tokens`` input written to it;
    ``reasoning_tokens`` is the part of ``output_tokens`` the model spent thinking (when
    the provider says so), not an extra amount.
    """

    input_tokens: Count = 0
    output_tokens: Count = 0
    cache_read_tokens: Count = 0
    cache_write_tokens: Count = 0
    reasoning_tokens: Count = 0

    def plus(self, usage: TokenUsage | TokenTotals) -> TokenTotals:
        """These totals with ``usage`` added (absent counts are 0)."""
        return TokenTotals(
            input_tokens=self.input_tokens + usage.input_tokens,
            output_tokens=self.output_tokens + usage.output_tokens,
            cache_read_tokens=self.cache_read_tokens + (usage.cache_read_tokens or 0),
            cache_write_tokens=self.cache_write_tokens + (usage.cache_write_tokens or 0),
            reasoning_tokens=self.reasoning_tokens + (usage.reasoning_tokens or 0),
        )


class ModelPrice(Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """What one model costs, in US dollars per million tokens.

    ``input`` prices uncached input (a cache miss), ``cache_read`` cached input (a
    cache hit), ``cache_write`` input written to the cache (``input`` when unset: a
    provider without a separate write price), ``output`` every output token, reasoning
    included.
    """

    input: float
    output: float
    cache_read: float
    cache_write: float | UnsetType = UNSET


class TurnUsage(Struct, frozen=True, kw_only=True, rename="camel"):
    """One turn's model steps, tokens and cost (``UNSET`` without a price)."""

    turn: Count
    steps: Count
    tokens: TokenTotals
    cost: float | UnsetType = UNSET


class UsageSummary(Struct, frozen=True, kw_only=True, rename="camel"):
    """A log's usage: per turn (in log order), and summed over them.

    ``delegated`` is the part of ``tokens`` that sub-agents used (``UNSET`` when none
    did); ``cost`` prices all of ``tokens`` at the one price given.
    """

    turns: tuple[TurnUsage, ...]
    steps: Count
    tokens: TokenTotals
    cost: float | UnsetType = UNSET
    delegated: TokenTotals | UnsetType = UNSET
