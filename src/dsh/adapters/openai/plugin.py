"""The ``llm-openai`` plugin: serve models of an OpenAI-compatible endpoint through the ``llm`` service.

Config (YAML keys in camelCase; the snake_case spellings are accepted too):

* ``apiKey`` -- else the variable ``apiKeyEnv`` names (default ``DEEPSEEK_API_KEY``);
  required (an empty key fails);
* ``baseURL`` -- else the variable ``baseURLEnv`` names (default ``DEEPSEEK_BASE_URL``),
  else :data:`PUBLIC_BASE_URL`;
* ``models`` -- the model names to serve (default :data:`DEFAULT_MODELS`);
* ``reasoning`` (``off`` | ``high`` | ``xhigh``) -- thinking mode for every request;
  omitted, thinking is enabled with the provider's default effort.

The environment is read only for keys the config leaves out (or null): an explicit
empty ``apiKey`` fails rather than falling back, and an empty base URL is used as is.
``apply`` builds ONE :class:`OpenAIAdapter`, registers it for every model at once and
returns it (``fiber.instance``); unloading the plugin unregisters the models, then
closes the adapter's SDK client.
"""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict, Field

from dsh.adapters.openai.adapter import DEFAULT_MODELS, PUBLIC_BASE_URL, OpenAIAdapter
from dsh.adapters.openai.request import Reasoning
from dsh.core.errors import LlmError
from dsh.core.llm import LLM
from dsh.kernel import Context

name = "llm-openai"
inject = ["llm"]

API_KEY_ENV = "DEEPSEEK_API_KEY"
BASE_URL_ENV = "DEEPSEEK_BASE_URL"


class Config(BaseModel):
    """The plugin's config; see the module docstring."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    api_key: str | None = Field(default=None, alias="apiKey")
    base_url: str | None = Field(default=None, alias="baseURL")
    api_key_env: str = Field(default=API_KEY_ENV, alias="apiKeyEnv")
    base_url_env: str = Field(default=BASE_URL_ENV, alias="baseURLEnv")
    models: list[str] = Field(default_factory=lambda: list(DEFAULT_MODELS))
    reasoning: Reasoning | None = None


def apply(ctx: Context, config: Config) -> OpenAIAdapter:
    """Register one adapter for ``config.models`` and return it (it becomes the fiber's instance).

    Raises ``LlmError`` code ``NO_API_KEY`` when no key is configured, before anything
    is registered.
    """
    api_key = config.api_key if config.api_key is not None else os.environ.get(config.api_key_env)
    if not api_key:
        raise LlmError(f"{name}: an API key is required (Config.apiKey or ${config.api_key_env})", "NO_API_KEY")
    base_url = config.base_url if config.base_url is not None else os.environ.get(config.base_url_env)
    adapter = OpenAIAdapter(
        api_key,
        base_url if base_url is not None else PUBLIC_BASE_URL,
        models=config.models,
        reasoning=config.reasoning,
    )
    ctx.effect(lambda: adapter.aclose, "llm-openai sdk client")
    ctx[LLM].register_adapter(config.models, adapter)
    return adapter
