"""Model providers for the ``llm`` service, each a plugin that registers an adapter.

* :mod:`dsh.adapters.deepseek` -- ``llm-deepseek``: DeepSeek chat completions over aiohttp;
* :mod:`dsh.adapters.openai` -- ``llm-openai``: any OpenAI-compatible endpoint through the official SDK.
"""

__all__: list[str] = []
