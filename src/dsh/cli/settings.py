"""The global options of ``dsh``, resolved once: :class:`Settings`.

The sessions root defaults to ``$DSH_HOME/sessions``, else
``$XDG_DATA_HOME/dsh/sessions``, else ``~/.local/share/dsh/sessions``. Paths are made
absolute against the working directory when the command starts. A tree that names
the default root spells it by that origin (:func:`portable_sessions_root`), so a tree
``dsh config`` prints follows ``$DSH_HOME`` wherever it boots.

The settings file (``$DSH_HOME/settings.yml``, else ``$XDG_CONFIG_HOME/dsh/settings.yml``,
else ``~/.config/dsh/settings.yml``; optional) is a YAML mapping with the keys
``provider`` (:data:`PROVIDERS`) and ``model``; a command-line option wins over it.
``mcpServers`` maps names to MCP servers whose tools the built-in profiles offer (the
``mcp`` plugin's ``servers``, checked when the tree boots). ``permissions`` holds the
``allow`` and ``deny`` rule lists of the built-in profiles' ``permissions`` plugin
(``permissions: {allow: ["bash(git status*)"], deny: ["bash(rm -rf*)"]}``, checked when
the tree boots).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsh.cli.errors import CliError
from dsh.core.persistence import unwritable_dir

HOME_ENV = "DSH_HOME"
STORE_ENV = "DSH_STORE"
"""The session store when ``--store`` is not given (see :func:`parse_store`)."""

STORE_SCHEMES = {"sqlite://": "sqlite", "postgresql://": "postgres", "postgres://": "postgres"}
"""The URL schemes ``--store`` takes, by the backend they select; anything else is a JSONL directory."""
"""Where dsh keeps its data (sessions under ``sessions/``) and its settings file."""

SETTINGS_FILE = "settings.yml"
"""The settings file's name (see the module docstring)."""

PROVIDERS: dict[str, tuple[str, str]] = {
    "deepseek": ("DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL"),
    "openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
}
"""Each provider of the built-in profile: the variables holding its API key and its base URL."""

SETTING_KEYS = ("mcpServers", "model", "permissions", "provider")
"""The keys the settings file may hold."""


def default_sessions_root(environ: Mapping[str, str]) -> Path:
    """``$DSH_HOME/sessions``, else ``$XDG_DATA_HOME/dsh/sessions``, else ``~/.local/share/dsh/sessions``."""
    home = environ.get(HOME_ENV)
    if home:
        return Path(home).expanduser() / "sessions"
    data = environ.get("XDG_DATA_HOME")
    base = Path(data).expanduser() if data else Path.home() / ".local" / "share"
    return base / "dsh" / "sessions"


def portable_sessions_root(environ: Mapping[str, str]) -> str | None:
    """How a tree spells the default sessions root so that it follows the environment it boots in.

    ``${DSH_HOME}/sessions`` when ``$DSH_HOME`` is set, else
    ``${XDG_DATA_HOME}/dsh/sessions`` when that is, else ``~/.local/share/dsh/sessions``
    (expanded by :func:`~dsh.kernel.expand_path` when the tree is validated). None when
    the variable in use holds a relative path: a tree would resolve it against its own
    folder, not the working directory, so only the absolute path says the same.
    """
    for name, tail in ((HOME_ENV, "sessions"), ("XDG_DATA_HOME", "dsh/sessions")):
        value = environ.get(name)
        if value:
            return f"${{{name}}}/{tail}" if Path(value).expanduser().is_absolute() else None
    return "~/.local/share/dsh/sessions"


def settings_file(environ: Mapping[str, str]) -> Path:
    """``$DSH_HOME/settings.yml``, else ``$XDG_CONFIG_HOME/dsh/settings.yml``, else ``~/.config/dsh/settings.yml``."""
    home = environ.get(HOME_ENV)
    if home:
        return Path(home).expanduser() / SETTINGS_FILE
    config = environ.get("XDG_CONFIG_HOME")
    base = Path(config).expanduser() if config else Path.home() / ".config"
    return base / "dsh" / SETTINGS_FILE


def read_settings_file(path: Path) -> dict[str, Any]:
    """The settings ``path`` holds (empty when there is no such file).

    Raises :class:`CliError` (status 2) naming the file for unreadable YAML, a
    document that is not a mapping, an unknown key or a value that is not a string.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as error:
        raise CliError(f"cannot read the settings file {path}: {error}; fix or remove it", 2) from error
    import yaml

    try:
        raw: Any = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise CliError(f"the settings file {path} is not valid YAML ({error}); fix or remove it", 2) from error
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise CliError(f"the settings file {path} must be a mapping (provider: ..., model: ...); fix or remove it", 2)
    unknown = sorted(str(key) for key in raw if key not in SETTING_KEYS)
    if unknown:
        raise CliError(f"the settings file {path} has unknown keys {unknown}: it takes {list(SETTING_KEYS)}", 2)
    for key, value in raw.items():
        if key == "mcpServers":
            if not isinstance(value, dict):
                raise CliError(f"the settings file {path}: mcpServers must be a mapping of server names", 2)
        elif key == "permissions":
            if not isinstance(value, dict):
                raise CliError(
                    f"the settings file {path}: permissions must be a mapping such as "
                    '{allow: ["bash(git status*)"], deny: []}',
                    2,
                )
        elif not isinstance(value, str) or not value:
            raise CliError(f"the settings file {path}: {key} must be a non-empty string, got {value!r}", 2)
    return dict(raw)


@dataclass(frozen=True)
class Settings:
    """What the global options ask for, with defaults applied and paths absolute.

    ``config`` is a user's plugin tree (None: the built-in profile); ``model`` None
    means "the profile's default"; ``provider`` picks the built-in profile's adapter
    (:data:`PROVIDERS`); ``has_api_key`` records whether the provider's key variable
    was set (non-empty) when the command started.
    """

    config: Path | None
    model: str | None
    sessions_root: Path
    cwd: Path
    demo: bool
    invariants: bool
    system_prompt: str | None
    verbose: int
    has_api_key: bool
    provider: str = "deepseek"
    debug: bool = False
    mcp_servers: dict[str, Any] | None = None
    permissions: dict[str, Any] | None = None
    """The settings file's ``permissions`` rules (``allow`` / ``deny``), for the ``permissions`` plugin."""
    store: tuple[str, str] | None = None
    """``("sqlite", path)`` or ``("postgres", url)`` from ``--store``/``$DSH_STORE``; None: JSONL logs."""
    portable_root: str | None = None
    """The default sessions root as :func:`portable_sessions_root` spells it; None when the user
    named the root (``--sessions-root``, a JSONL ``--store``) or no portable spelling says the same."""

    @property
    def key_env(self) -> str:
        """The variable the provider's API key is read from."""
        return PROVIDERS[self.provider][0]

    @property
    def base_url_env(self) -> str:
        """The variable the provider's base URL is read from."""
        return PROVIDERS[self.provider][1]

    @classmethod
    def from_args(cls, args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Settings:
        """Resolve ``args`` (global options) against ``environ`` (default ``os.environ``) and the settings file.

        Raises :class:`CliError` (status 2) for ``--cwd`` naming no directory, for
        ``--demo`` combined with ``--config``, for an unknown provider and for a bad
        settings file.
        """
        env = os.environ if environ is None else environ
        config = Path(args.config).absolute() if args.config else None
        if config is not None and args.demo:
            raise CliError("--demo is a built-in profile and cannot be combined with --config: drop one of them", 2)
        cwd = Path(args.cwd).absolute() if args.cwd else Path.cwd()
        if not cwd.is_dir():
            raise CliError(f"--cwd {cwd} is not a directory: give an existing directory", 2)
        store_text = getattr(args, "store", None) or env.get(STORE_ENV) or None
        if store_text is not None and args.sessions_root:
            raise CliError("--store and --sessions-root both name the session store: give one of them", 2)
        store = None if store_text is None else parse_store(store_text)
        portable = None
        if store is not None and store[0] == "jsonl":
            root, store = Path(store[1]), None
        elif args.sessions_root:
            root = Path(args.sessions_root).expanduser()
        else:
            root, portable = default_sessions_root(env), portable_sessions_root(env)
        stored = read_settings_file(settings_file(env))
        provider = getattr(args, "provider", None) or stored.get("provider", "deepseek")
        if provider not in PROVIDERS:
            raise CliError(f'unknown provider "{provider}": use one of {", ".join(PROVIDERS)}', 2)
        return cls(
            config=config,
            model=args.model or (None if args.demo else stored.get("model")),
            sessions_root=root.absolute(),
            cwd=cwd,
            demo=bool(args.demo),
            invariants=bool(args.invariants),
            system_prompt=args.system_prompt,
            verbose=int(args.verbose),
            has_api_key=bool(env.get(PROVIDERS[provider][0])),
            provider=provider,
            debug=bool(getattr(args, "debug", False)),
            mcp_servers=stored.get("mcpServers"),
            permissions=stored.get("permissions"),
            store=store,
            portable_root=portable,
        )


def parse_store(text: str) -> tuple[str, str]:
    """The backend and its location that a ``--store`` value names.

    ``sqlite:///path/to/file`` (``sqlite://`` then the path, made absolute),
    ``postgresql://...`` or ``postgres://...`` (a libpq URL, kept as is), or any other
    text: a directory of JSONL logs (made absolute). Raises :class:`CliError` (status
    2) for a SQLite URL without a path.
    """
    for scheme, backend in STORE_SCHEMES.items():
        if text.startswith(scheme):
            if backend == "postgres":
                return backend, text
            path = text[len(scheme) :]
            if not path:
                raise CliError(f"--store {text} names no database file: use sqlite:///path/to/sessions.db", 2)
            return backend, str(Path(path).expanduser().absolute())
    return "jsonl", str(Path(text).expanduser().absolute())


def check_sessions_root(root: Path) -> None:
    """Raise :class:`CliError` unless sessions can be written under ``root``, before any model is asked.

    ``root`` (or, when it does not exist yet, its nearest existing ancestor, where it
    will be created) must be a writable directory.
    """
    problem = unwritable_dir(str(root))
    if problem is not None:
        fix = f"pass --sessions-root DIR or set {HOME_ENV} to a writable directory"
        raise CliError(f"the sessions root {problem}: {fix}")
