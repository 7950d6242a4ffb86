"""The environment a command starts with: an allowlist of ours, never the whole of it.

The model's shell must not see credentials, and a denylist of names cannot know them
all (``PGPASSWORD``, ``DATABASE_URL``, ``SSH_AUTH_SOCK``, ``*_AUTH``, …). So a command
gets only the variables named in :data:`DEFAULT_ENV_ALLOW` plus those the
``bash-local`` config adds (``envAllow``), then the config's fixed values (``env``),
then the model-friendly overrides (``NO_COLOR=1 TERM=dumb PAGER=cat GIT_PAGER=cat``).
An allowlist entry ending in ``*`` matches every name with that prefix (``LC_*``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from typing import Any

DEFAULT_ENV_ALLOW: tuple[str, ...] = (
    "COLORTERM",
    "HOME",
    "HOSTNAME",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "LOGNAME",
    "PATH",
    "SHELL",
    "TEMP",
    "TERM",
    "TMP",
    "TMPDIR",
    "TZ",
    "USER",
)
"""What a command inherits from dsh's environment when the config adds nothing."""

MODEL_FRIENDLY: Mapping[str, str] = {"NO_COLOR": "1", "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat"}
"""Applied last: no colors, no pagers."""


class EnvPolicy:
    """Which inherited names pass (``allow``: exact names and ``PREFIX*`` entries) and fixed ``extra`` values."""

    def __init__(self, allow: Iterable[str] = (), extra: Mapping[str, str] | None = None) -> None:
        names = (*DEFAULT_ENV_ALLOW, *allow)
        self.exact = frozenset(name for name in names if not name.endswith("*"))
        self.prefixes = tuple(sorted({name[:-1] for name in names if name.endswith("*")}))
        self.extra = dict(extra or {})

    def allows(self, name: str) -> bool:
        return name in self.exact or name.startswith(self.prefixes)

    def build(self, parent: Mapping[str, str]) -> dict[str, str]:
        """A new dict: the allowed part of ``parent``, then ``extra``, then :data:`MODEL_FRIENDLY`."""
        env = {name: value for name, value in parent.items() if self.allows(name)}
        env.update(self.extra)
        env.update(MODEL_FRIENDLY)
        return env


def child_env(
    parent: Mapping[str, str] | None = None, allow: Iterable[str] = (), extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a command started now from ``parent`` (default: ``os.environ``).

    Returns a new dict the caller owns.
    """
    return EnvPolicy(allow, extra).build(os.environ if parent is None else parent)


class ChildEnv:
    """The environment and the path of ``bash`` for commands under one :class:`EnvPolicy`.

    Both are kept until ``os.environ`` changes. Building costs tens of microseconds;
    noticing a change costs one dict comparison with the table CPython keeps behind
    ``os.environ`` (``os.environ._data``; any other mapping is copied and compared
    whole). ``bash`` is None when it is not on PATH (the spawn then fails the usual
    way, naming ``bash``) or PATH has relative entries (the spawn searches it).
    """

    def __init__(self, policy: EnvPolicy | None = None) -> None:
        self.policy = policy if policy is not None else EnvPolicy()
        self._seen: dict[Any, Any] | None = None
        self._env: dict[str, str] = {}
        self._bash: str | None = None

    def current(self) -> tuple[dict[str, str], str | None]:
        """The environment (shared: never mutate it) and the path of ``bash`` (or None)."""
        environ = os.environ
        table = getattr(environ, "_data", None)
        if not isinstance(table, dict):
            table = dict(environ)
        if table != self._seen:
            self._env = self.policy.build(environ)
            self._bash = _absolute_bash(self._env.get("PATH", os.defpath))
            self._seen = dict(table)
        return self._env, self._bash


def _absolute_bash(path: str) -> str | None:
    """``bash`` as found on ``path``, or None when the search must be left to the spawn.

    A relative (or empty) entry means a directory relative to the command's
    workdir, which only the spawn itself knows: then nothing is resolved ahead.
    """
    if not all(os.path.isabs(entry) for entry in path.split(os.pathsep)):
        return None
    return shutil.which("bash", path=path)
