"""The ``acp`` plugin's config (YAML keys are camelCase, as in the reference)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from dsh.core.agent import AgentOptions

DEFAULT_AGENT_NAME = "deepseek-harness-acp"
DEFAULT_AGENT_VERSION = "0.0.1"


class Config(BaseModel):
    """``model`` / ``systemPrompt`` become every bridge agent's options (unset when absent);
    ``agentName`` / ``agentVersion`` are announced in the ``initialize`` answer;
    ``contextWindows`` (model name -> tokens) adds to the known context windows that
    ``usage_update`` reports (:data:`dsh.core.usage.DEFAULT_CONTEXT_WINDOWS`).

    The transport is not configuration: it is a runtime argument of ``apply``.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    model: str | None = None
    system_prompt: str | None = Field(default=None, alias="systemPrompt")
    agent_name: str = Field(default=DEFAULT_AGENT_NAME, alias="agentName")
    agent_version: str = Field(default=DEFAULT_AGENT_VERSION, alias="agentVersion")
    context_windows: dict[str, PositiveInt] = Field(default_factory=dict, alias="contextWindows")


def agent_options(config: Config) -> AgentOptions:
    """Fresh options for one bridge agent: only the fields the config sets (the rest None)."""
    return AgentOptions(model=config.model, system_prompt=config.system_prompt)
