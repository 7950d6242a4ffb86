"""Model providers for the ``llm`` service, each a plugin that registers an adapter.

* :mod:`dsh.adapters.deepseek` -- ``llm-deepseek``: DeepSeek chat completions over httpx.
"""

__all__: list[str] = []
