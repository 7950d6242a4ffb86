"""Plugin config validation (pydantic) with errors that name every bad field, and config paths.

A field typed :data:`ConfigPath` names a place on disk. Its value may use ``$NAME``
or ``${NAME}`` (an environment variable, which must be set and non-empty; ``$$`` is
a literal ``$``) and then a leading ``~`` or ``~user`` (a home directory), both
expanded when the config is validated (:func:`expand_path`). A path still relative
after that resolves against the *base directory* given to :func:`validate_config`:
the folder of the tree file that holds the entry, when the loader validates it.
Without a base directory (a config built in code) it stays relative, and the plugin
resolves it as it documents (mostly against the working directory).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ValidationError, ValidationInfo
from pydantic_core import PydanticCustomError


class KernelError(Exception):
    """An error raised by the kernel itself (bad plugin, missing service, ...)."""


class ConfigError(KernelError):
    """A plugin config that failed validation. ``problems`` lists ``(path, message)``."""

    def __init__(self, plugin: str, problems: list[tuple[str, str]]) -> None:
        self.plugin = plugin
        self.problems = problems
        listed = "; ".join(f"{path}: {message}" for path, message in problems)
        super().__init__(f'plugin "{plugin}": invalid config: {listed} (fix these fields in its config)')


_BASE_DIR = "dsh.kernel.base_dir"
"""The key of the base directory in the pydantic validation context."""

_REFERENCE = re.compile(r"\$(?:(?P<dollar>\$)|\{(?P<braced>[^}]*)(?P<closed>\}?)|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def expand_path(
    text: str, base_dir: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None
) -> str:
    """``text`` with its variables, then its leading ``~``, expanded; joined to ``base_dir`` when still relative.

    ``$NAME`` and ``${NAME}`` read ``environ`` (default ``os.environ``); ``$$`` is a
    ``$``; a ``$`` before anything else is kept. ``~`` follows ``$HOME`` (then the
    password database). A relative result is joined to ``base_dir`` (and normalized)
    when one is given; an empty ``text`` and any other result are returned as they
    are. Raises :class:`ValueError`, with a message naming the fix, for an unset or
    empty variable, a malformed ``${...}`` and an unknown ``~user``.
    """
    env = os.environ if environ is None else environ

    def substitute(match: re.Match[str]) -> str:
        if match["dollar"] is not None:
            return "$"
        name = match["bare"]
        if name is None:
            name = match["braced"]
            if not match["closed"]:
                raise ValueError(f"{text!r} has an unclosed ${{: write ${{NAME}}, or $$ for a literal $")
            if not _NAME.fullmatch(name):
                raise ValueError(
                    f"{text!r}: ${{{name}}} is not a variable name: write ${{NAME}}, or $$ for a literal $"
                )
        value = env.get(name)
        if not value:
            raise ValueError(f"{text!r} uses ${name}, which is not set (or empty): set {name} or write the path out")
        return value

    if not text:
        return text
    expanded = _REFERENCE.sub(substitute, text) if "$" in text else text
    if expanded.startswith("~"):
        home = os.path.expanduser(expanded)
        if home.startswith("~"):
            user = expanded[1:].split("/", 1)[0]
            raise ValueError(f"{text!r}: there is no user {user!r} whose home ~{user} names; write the path out")
        expanded = home
    if base_dir is None or os.path.isabs(expanded):
        return expanded
    return os.path.normpath(os.path.join(os.fspath(base_dir), expanded))


def escape_path(path: str) -> str:
    """How a config spells the literal ``path``: each ``$`` doubled, a leading ``~`` made ``./~``.

    :func:`expand_path` of the result names ``path`` again: the same string for an
    absolute ``path``, the same place relative to the base directory for a relative one.
    """
    escaped = path.replace("$", "$$")
    return "./" + escaped if escaped.startswith("~") else escaped


def expand_config_path(value: str, info: ValidationInfo) -> str:
    """The validator behind :data:`ConfigPath`, for a field validator of a path with special values.

    Expands ``value`` (:func:`expand_path`) against the base directory in ``info``'s
    context; raises a pydantic error carrying :func:`expand_path`'s message.
    """
    context = info.context
    base = context.get(_BASE_DIR) if isinstance(context, Mapping) else None
    try:
        return expand_path(value, base)
    except ValueError as error:
        raise PydanticCustomError("config_path", "{reason}", {"reason": str(error)}) from None


ConfigPath = Annotated[str, AfterValidator(expand_config_path)]
"""A config field that names a place on disk (see the module docstring): ``root: ConfigPath``."""


def _path(location: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in location) or "(root)"


def validate_config(
    plugin: str, schema: type[BaseModel] | None, raw: object, *, base_dir: str | os.PathLike[str] | None = None
) -> Any:
    """Validate ``raw`` against ``schema``; return the model (or ``raw`` if no schema).

    ``None`` counts as an empty mapping; a ``schema`` instance is returned as it is.
    ``base_dir`` anchors the relative :data:`ConfigPath` values (the folder of the
    tree file holding the entry). Raises :class:`ConfigError` listing every failing
    field path.
    """
    if schema is None:
        return {} if raw is None else raw
    if raw is None:
        raw = {}
    if isinstance(raw, schema):
        return raw
    if not isinstance(raw, Mapping):
        raise ConfigError(plugin, [("(root)", f"expected a mapping, got {type(raw).__name__}")])
    context = None if base_dir is None else {_BASE_DIR: os.fspath(base_dir)}
    try:
        return schema.model_validate(dict(raw), context=context)
    except ValidationError as error:
        problems = [(_path(tuple(item["loc"])), item["msg"]) for item in error.errors()]
        raise ConfigError(plugin, problems) from error
