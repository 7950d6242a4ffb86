"""The ``compaction`` plugin's config, and the context window of each model.

Every field has a default, so the plugin loads without config. ``models`` maps a model
name pattern (``fnmatch`` style, first match wins) to the ``contextWindow`` of the
models it names; :data:`~dsh.core.usage.DEFAULT_CONTEXT_WINDOWS` holds DeepSeek's (the
table ACP's ``usage_update`` reads too), and a model no entry names gets the top-level
``contextWindow``.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from pydantic import BaseModel, ConfigDict, Field, model_validator

from dsh.core.usage import DEFAULT_CONTEXT_WINDOWS

DEFAULT_CONTEXT_WINDOW = 128_000
"""The window of a model no pattern names (tokens)."""


class ModelSettings(BaseModel):
    """Per-model settings: the model's ``contextWindow`` in tokens."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    context_window: int = Field(gt=0, alias="contextWindow")


class Config(BaseModel):
    """The plugin's config (camelCase in YAML).

    * ``threshold`` (0.8): compact before a model request estimated at this share of
      the model's context window or more;
    * ``retain`` (0.16): the share of the window the recent tail kept verbatim holds at
      least (it must stay below ``threshold``);
    * ``pruneChars`` (8000): a tool result longer than this (text characters) outside
      the recent tail is pruned to its first and last ``keepChars`` (1500) characters;
    * ``summaryMaxTokens`` (8192): the output cap of the summary request;
    * ``maxFailures`` (3): consecutive failed attempts after which automatic
      compaction stops for the session (the user is told); a manual one still runs;
    * ``auto`` (true): compact at the threshold and on a "context too long" error;
    * ``contextWindow`` and ``models``: see the module docstring.
    """

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    threshold: float = Field(default=0.8, gt=0, le=1)
    retain: float = Field(default=0.16, gt=0, lt=1)
    prune_chars: int = Field(default=8000, gt=0, alias="pruneChars")
    keep_chars: int = Field(default=1500, ge=0, alias="keepChars")
    summary_max_tokens: int = Field(default=8192, gt=0, alias="summaryMaxTokens")
    max_failures: int = Field(default=3, ge=1, alias="maxFailures")
    auto: bool = True
    context_window: int = Field(default=DEFAULT_CONTEXT_WINDOW, gt=0, alias="contextWindow")
    models: dict[str, ModelSettings] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> Config:
        if self.retain >= self.threshold:
            raise ValueError(f"retain ({self.retain}) must be below threshold ({self.threshold}): lower retain")
        if 2 * self.keep_chars >= self.prune_chars:
            raise ValueError(
                f"keepChars ({self.keep_chars}) must be under half of pruneChars ({self.prune_chars}): lower keepChars"
            )
        return self

    def window(self, model: str) -> int:
        """The context window of ``model`` in tokens.

        From ``models``, else :data:`DEFAULT_CONTEXT_WINDOWS`, else ``contextWindow``.
        """
        for pattern, settings in self.models.items():
            if fnmatchcase(model, pattern):
                return settings.context_window
        return DEFAULT_CONTEXT_WINDOWS.get(model, self.context_window)
