"""The ``llm-deepseek`` plugin: serve DeepSeek models through the ``llm`` service (SPEC §10).

Config (YAML keys in camelCase; the snake_case spellings are accepted too):

* ``apiKey`` -- else ``$DEEPSEEK_API_KEY``; required (an empty key fails);
* ``baseURL`` -- else ``$DEEPSEEK_BASE_URL``, else :data:`PUBLIC_BASE_URL`;
* ``models`` -- the model names to serve (default :data:`DEFAULT_MODELS`);
* ``thinking`` (``enabled`` | ``disabled``), ``reasoningEffort`` (``high`` | ``max``) --
  sent on every request when set.

The environment is read only for keys the config leaves out (or null): an explicit
empty ``apiKey`` fails rather than falling back, and an empty base URL is used as is.
``apply`` builds ONE :class:`DeepSeekAdapter`, starts importing aiohttp (and, for an
``https`` base URL, its TLS setup) in a worker thread (:meth:`DeepSeekAdapter.prepare`),
registers it for every model at once and returns it (``fiber.instance``); unloading the
plugin unregisters the models, then closes the adapter's aiohttp session (a registered
disposer).
"""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field

from dsh.adapters.deepseek.adapter import DEFAULT_MODELS, PUBLIC_BASE_URL, DeepSeekAdapter
from dsh.adapters.deepseek.serialize import ReasoningEffort, Thinking
from dsh.core.errors import LlmError
from dsh.core.llm import LLM
from dsh.kernel import Context

name = "llm-deepseek"
inject = ["llm"]

API_KEY_ENV = "DEEPSEEK_API_KEY"
BASE_URL_ENV = "DEEPSEEK_BASE_URL"


class Config(BaseModel):
    """The plugin's config; see the module docstring."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    api_key: str | None = Field(default=None, alias="apiKey")
    base_url: str | None = Field(default=None, alias="baseURL")
    models: list[str] = Field(default_factory=lambda: list(DEFAULT_MODELS))
    thinking: Thinking | None = None
    reasoning_effort: ReasoningEffort | None = Field(default=None, alias="reasoningEffort")


def apply(ctx: Context, config: Config) -> DeepSeekAdapter:
    """Register one adapter for ``config.models`` and return it (it becomes the fiber's instance).

    Raises ``LlmError`` code ``NO_API_KEY`` when no key is configured, before anything
    is registered.
    """
    api_key = config.api_key if config.api_key is not None else os.environ.get(API_KEY_ENV)
    if not api_key:
        raise LlmError(f"{name}: an API key is required (Config.apiKey or ${API_KEY_ENV})", "NO_API_KEY")
    base_url = config.base_url if config.base_url is not None else os.environ.get(BASE_URL_ENV)
    adapter = DeepSeekAdapter(
        api_key,
        base_url if base_url is not None else PUBLIC_BASE_URL,
        models=config.models,
        thinking=config.thinking,
        reasoning_effort=config.reasoning_effort,
    )
    ctx.effect(lambda: adapter.aclose, "llm-deepseek http session")
    adapter.prepare()
    ctx[LLM].register_adapter(config.models, adapter)
    return adapter
