"""Plugin config validation (pydantic) with errors that name every bad field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError


class KernelError(Exception):
    """An error raised by the kernel itself (bad plugin, missing service, ...)."""


class ConfigError(KernelError):
    """A plugin config that failed validation. ``problems`` lists ``(path, message)``."""

    def __init__(self, plugin: str, problems: list[tuple[str, str]]) -> None:
        self.plugin = plugin
        self.problems = problems
        listed = "; ".join(f"{path}: {message}" for path, message in problems)
        super().__init__(f'plugin "{plugin}": invalid config: {listed} (fix these fields in its config)')


def _path(location: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in location) or "(root)"


def validate_config(plugin: str, schema: type[BaseModel] | None, raw: object) -> Any:
    """Validate ``raw`` against ``schema``; return the model (or ``raw`` if no schema).

    ``None`` counts as an empty mapping. Raises :class:`ConfigError` listing every
    failing field path.
    """
    if schema is None:
        return {} if raw is None else raw
    if raw is None:
        raw = {}
    if isinstance(raw, schema):
        return raw
    if not isinstance(raw, Mapping):
        raise ConfigError(plugin, [("(root)", f"expected a mapping, got {type(raw).__name__}")])
    try:
        return schema.model_validate(dict(raw))
    except ValidationError as error:
        problems = [(_path(tuple(item["loc"])), item["msg"]) for item in error.errors()]
        raise ConfigError(plugin, problems) from error
