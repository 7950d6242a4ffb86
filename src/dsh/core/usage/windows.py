"""The default context windows: how many tokens a request to each DeepSeek API model may hold.

The two DeepSeek V4 models take 256,000 tokens; ``deepseek-chat`` and
``deepseek-reasoner`` are modes of ``deepseek-v4-flash`` (see :mod:`dsh.core.usage.prices`),
so they take as many. One table for every reader (compaction's threshold, ACP's
``usage_update``); each reader's config may name more models or override these.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

DEFAULT_CONTEXT_WINDOWS: Mapping[str, int] = MappingProxyType(
    {
        "deepseek-v4-flash": 256_000,
        "deepseek-v4-pro": 256_000,
        "deepseek-chat": 256_000,
        "deepseek-reasoner": 256_000,
    }
)
"""Model name -> context window in tokens, for the models of the DeepSeek API."""
