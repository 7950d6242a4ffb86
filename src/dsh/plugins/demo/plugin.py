"""The ``llm-demo`` plugin: serve the keyless demo model through the ``llm`` service.

Config: ``models`` -- the model names it answers (default ``["demo"]``). ``apply``
registers one :class:`~dsh.plugins.demo.model.DemoModel` for all of them and returns
it (the fiber's ``instance``); unloading the plugin unregisters it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from dsh.core.llm import LLM
from dsh.kernel import Context
from dsh.plugins.demo.model import DemoModel

name = "llm-demo"
inject = [LLM.name]

DEMO_MODEL = "demo"
"""The model name the demo answers by default."""


class Config(BaseModel):
    """The plugin's config; see the module docstring."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: list[str] = Field(default_factory=lambda: [DEMO_MODEL], min_length=1)


def apply(ctx: Context, config: Config) -> DemoModel:
    """Register the demo model for ``config.models`` on behalf of ``ctx``'s fiber and return it."""
    model = DemoModel()
    ctx[LLM].register_adapter(config.models, model)
    return model
