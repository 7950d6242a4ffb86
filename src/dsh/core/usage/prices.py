"""The default price table: DeepSeek's published API prices (US dollars per million tokens).

Source: DeepSeek API Docs, "Models & Pricing", https://api-docs.deepseek.com/quick_start/pricing
(as published in May 2026). ``deepseek-v4-flash``: cache-hit input $0.0028, cache-miss
input $0.14, output $0.28 (the cache-hit price was cut to a tenth of the launch price
on 2026-04-26); ``deepseek-v4-pro``: $0.003625, $0.435 and $0.87 (a quarter of its
launch prices). The page says ``deepseek-chat`` and ``deepseek-reasoner`` are the
non-thinking and thinking modes of ``deepseek-v4-flash``, so they are priced like it.
DeepSeek has no separate cache-write price: input written to the cache is billed as a
miss. Prices change: a price table in config overrides these.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from dsh.core.usage.types import ModelPrice

_FLASH = ModelPrice(input=0.14, output=0.28, cache_read=0.0028)
_PRO = ModelPrice(input=0.435, output=0.87, cache_read=0.003625)

DEFAULT_PRICES: Mapping[str, ModelPrice] = MappingProxyType(
    {
        "deepseek-v4-flash": _FLASH,
        "deepseek-v4-pro": _PRO,
        "deepseek-chat": _FLASH,
        "deepseek-reasoner": _FLASH,
    }
)
"""Model name -> price, for the models of the DeepSeek API (see the module docstring)."""
