"""The global options of ``dsh``, resolved once: :class:`Settings`.

The sessions root defaults to ``$DSH_HOME/sessions``, else
``$XDG_DATA_HOME/dsh/sessions``, else ``~/.local/share/dsh/sessions``. Paths are made
absolute against the working directory when the command starts.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from dsh.cli.errors import CliError

API_KEY_ENV = "DEEPSEEK_API_KEY"
"""The variable holding the DeepSeek API key (read by the ``llm-deepseek`` plugin)."""

HOME_ENV = "DSH_HOME"
"""Where dsh keeps its data (sessions under ``sessions/``)."""


def default_sessions_root(environ: Mapping[str, str]) -> Path:
    """``$DSH_HOME/sessions``, else ``$XDG_DATA_HOME/dsh/sessions``, else ``~/.local/share/dsh/sessions``."""
    home = environ.get(HOME_ENV)
    if home:
        return Path(home).expanduser() / "sessions"
    data = environ.get("XDG_DATA_HOME")
    base = Path(data).expanduser() if data else Path.home() / ".local" / "share"
    return base / "dsh" / "sessions"


@dataclass(frozen=True)
class Settings:
    """What the global options ask for, with defaults applied and paths absolute.

    ``config`` is a user's plugin tree (None: the built-in profile); ``model`` None
    means "the profile's default"; ``has_api_key`` records whether
    ``$DEEPSEEK_API_KEY`` was set (non-empty) when the command started.
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

    @classmethod
    def from_args(cls, args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> Settings:
        """Resolve ``args`` (global options) against ``environ`` (default ``os.environ``).

        Raises :class:`CliError` (status 2) for ``--cwd`` naming no directory, and for
        ``--demo`` combined with ``--config``.
        """
        env = os.environ if environ is None else environ
        config = Path(args.config).absolute() if args.config else None
        if config is not None and args.demo:
            raise CliError("--demo is a built-in profile and cannot be combined with --config: drop one of them", 2)
        cwd = Path(args.cwd).absolute() if args.cwd else Path.cwd()
        if not cwd.is_dir():
            raise CliError(f"--cwd {cwd} is not a directory: give an existing directory", 2)
        root = Path(args.sessions_root).expanduser() if args.sessions_root else default_sessions_root(env)
        return cls(
            config=config,
            model=args.model or None,
            sessions_root=root.absolute(),
            cwd=cwd,
            demo=bool(args.demo),
            invariants=bool(args.invariants),
            system_prompt=args.system_prompt,
            verbose=int(args.verbose),
            has_api_key=bool(env.get(API_KEY_ENV)),
        )
