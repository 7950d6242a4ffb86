"""Model providers for the ``llm`` service, each a plugin that registers an adapter.

* :mod:`dsh.adapters.deepseek` -- ``llm-deepseek``: DeepSeek chat completions over :mod:`dsh.adapters.http`;
* :mod:`dsh.adapters.openai` -- ``llm-openai``: any OpenAI-compatible endpoint through the official SDK;
* :mod:`dsh.adapters.http` -- dsh's own lean HTTP/1.1 client (keep-alive pool, TLS, http proxies).
"""

__all__: list[str] = []
