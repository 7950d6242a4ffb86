"""The plugin trees ``dsh`` boots: the built-in profiles, or the user's ``--config`` file.

A built-in profile is a plugin tree built in code from :class:`Settings` and booted
through the real loader straight from its entries (no YAML is written or parsed on
the way: it would cost a few milliseconds of every start); ``dsh config`` prints it
as the YAML tree that boots the same:

* **default**: the core services, the local bash executor and tools, the local
  filesystem and the file tools (read, write, edit, glob, grep), the workspace's
  ``AGENTS.md`` in the system prompt (``workspace-instructions``), the ``permissions``
  plugin (modes, approvals, the settings file's rules; workspace-write and ask unless
  a session says otherwise) with ``plan-mode``, sub-agents
  (``subagent``: the ``subagent``, ``subagent_output`` and ``subagent_cancel`` tools), the agent loop
  (at most :data:`DEFAULT_MAX_STEPS` steps a turn),
  JSONL persistence under the sessions root, and the DeepSeek adapter, which reads
  ``$DEEPSEEK_API_KEY`` and ``$DEEPSEEK_BASE_URL`` itself (the key never appears in
  the tree). Needs the key.
* **openai** (``--provider openai`` or ``provider: openai`` in the settings file):
  the same with the ``llm-openai`` adapter (the OpenAI SDK) reading
  ``$OPENAI_API_KEY`` and ``$OPENAI_BASE_URL``: OpenAI itself, or any server with an
  OpenAI-compatible API (vLLM, Ollama, llama.cpp). It needs ``--model`` (or
  ``model:`` in the settings file).
* **demo** (``--demo``): the same with the keyless demo model (``dsh.plugins.demo``)
  in place of DeepSeek.

``--invariants`` adds the ``invariants`` plugin (development checks); ``mcpServers`` in
the settings file adds the ``mcp`` plugin running those servers; the standard
OpenTelemetry variables asking for an exporter (``OTEL_EXPORTER_OTLP_ENDPOINT``,
``OTEL_TRACES_EXPORTER``, see :func:`dsh.plugins.otel.exporter_requested`) add the
``otel`` plugin, which needs ``pip install 'dsh[otel]'``. A storage tree
(``sessions`` and persistence only) serves ``dsh sessions``.

Paths: the booted profile names the sessions root (the JSONL ``root`` and bash-local's
``sessionFiles``) and a SQLite ``--store`` file by their absolute paths, spelled
literally (:func:`~dsh.kernel.escape_path`). The *portable* profile ``dsh config``
prints spells the default sessions root by its origin instead (``${DSH_HOME}/sessions``,
``${XDG_DATA_HOME}/dsh/sessions`` or ``~/.local/share/dsh/sessions``, see
:func:`~dsh.cli.settings.portable_sessions_root`), expanded wherever the saved tree
boots; a root or store the user named on the command line stays the absolute path it
named (relative to the directory it was given in, which a tree file could not say).
The profile holds no working directory: each session runs in its own (``--cwd``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, TypeAlias

from dsh.cli.errors import CliError
from dsh.cli.settings import PROVIDERS, Settings, check_sessions_root
from dsh.kernel import escape_path
from dsh.plugins.otel import exporter_requested

DEFAULT_MODEL = "deepseek-v4-flash"
"""The model of the default profile unless ``--model`` names another."""

DEMO_MODEL = "demo"
"""The model of the demo profile."""

DEFAULT_MAX_STEPS = 100
"""The built-in profiles' step limit per turn (``--max-steps`` overrides it)."""

DEFAULT_SYSTEM_PROMPT = (
    "You are dsh, a coding agent working in the user's workspace. Run commands with bash. Every bash "
    "call starts a fresh shell in the workspace, so a cd does not carry over: pass workdir (or use "
    "paths) instead. Read every result, including its [exit code: N] line, and fix what failed before "
    "going on. Check your work by running it. Keep your answers short.\n\n"
    "For files, prefer the file tools to bash: read to look at a file (read it before you change it), "
    "edit to change part of a file, write to create one or replace all of it, glob to find files by "
    "name and grep to search their contents. Keep bash for running programs, tests and builds."
)

NO_MODEL_HELP = (
    "no model is configured. dsh talks to DeepSeek by default and needs an API key: set "
    f"{PROVIDERS['deepseek'][0]} (for example `export {PROVIDERS['deepseek'][0]}=sk-...`; "
    f"{PROVIDERS['deepseek'][1]} points dsh at another server speaking the same chat-completions API), "
    f"or use --provider openai with {PROVIDERS['openai'][0]} (and {PROVIDERS['openai'][1]} for a "
    "compatible server), or pass --config FILE with a plugin "
    "tree that provides a model, or try the keyless demo: `dsh run --demo 'echo hello'` (a "
    "scripted model, clearly labelled, that runs a real bash command and summarizes it)."
)

NO_OPENAI_KEY_HELP = (
    "--provider openai needs an API key: set OPENAI_API_KEY (a local server that checks none takes any "
    "value, e.g. `export OPENAI_API_KEY=none`) and OPENAI_BASE_URL for a server other than OpenAI's "
    "(e.g. http://127.0.0.1:8000/v1 for vLLM, http://127.0.0.1:11434/v1 for Ollama)."
)

NO_OPENAI_MODEL_HELP = (
    "--provider openai needs a model name: pass --model NAME (or put `model: NAME` in the settings file), "
    "e.g. --model gpt-4o-mini, or the name your local server serves."
)

OPENAI_PUBLIC_BASE_URL = "https://api.openai.com/v1"
"""Where ``--provider openai`` sends requests unless ``$OPENAI_BASE_URL`` says otherwise."""

Purpose: TypeAlias = Literal["agent", "storage"]
"""``agent``: a tree to run an agent on (needs a model); ``storage``: sessions and persistence only."""


@dataclass(frozen=True)
class Tree:
    """A plugin tree to boot.

    ``source`` is its YAML text, as read from ``file`` (the user's ``--config``) or
    given directly (``file`` None: it is booted from a temporary copy). A built-in
    profile has no ``source`` but ``entries`` (``{id, name, config?}`` mappings), which
    boot without any YAML; :attr:`text` renders them for ``dsh config``. ``model`` is
    the model the agent asks; None means the first model the booted tree serves.
    """

    label: str
    source: str | None
    file: Path | None
    model: str | None
    entries: tuple[dict[str, Any], ...] = ()

    @cached_property
    def text(self) -> str:
        """The tree as YAML: ``source``, else the rendered ``entries``."""
        return self.source if self.source is not None else render_tree(list(self.entries), self.label)


def _entry(id: str, name: str, config: dict[str, Any] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": id, "name": name}
    if config is not None:
        entry["config"] = config
    return entry


def _sessions_root(settings: Settings, portable: bool) -> str:
    """The sessions root as the profile spells it (see the module docstring)."""
    if portable and settings.portable_root is not None:
        return settings.portable_root
    return escape_path(str(settings.sessions_root))


def _persistence(settings: Settings, portable: bool) -> dict[str, Any]:
    if settings.store is None:
        return _entry("persistence", "session-persistence-jsonl", {"root": _sessions_root(settings, portable)})
    backend, where = settings.store
    if backend == "sqlite":
        return _entry("persistence", "session-persistence-sqlite", {"path": escape_path(where)})
    return _entry("persistence", "session-persistence-postgres", {"url": where})


def profile_model(settings: Settings) -> str:
    """The model a built-in profile serves and the agent asks: ``--model``, else the profile's default."""
    if settings.model is not None:
        return settings.model
    if settings.demo:
        return DEMO_MODEL
    if settings.provider == "openai":
        raise CliError(NO_OPENAI_MODEL_HELP, 2)
    return DEFAULT_MODEL


def profile_entries(settings: Settings, purpose: Purpose = "agent", *, portable: bool = False) -> list[dict[str, Any]]:
    """The entries of the built-in profile ``settings`` select (see the module docstring).

    ``portable``: spell the default sessions root by its origin (for a printed tree),
    not by the absolute path this process resolved (for the booted one).
    """
    if purpose == "storage":
        return [_entry("sessions", "sessions"), _persistence(settings, portable)]
    entries = [
        _entry("llm", "llm"),
        _entry("sessions", "sessions"),
        _entry("system-prompt", "system-prompt"),
        _entry("tools", "tools"),
        _entry("commands", "commands"),
        _entry("agents", "agents"),
    ]
    if settings.invariants:
        entries.append(_entry("invariants", "invariants"))
    entries += [
        # no cwd: each call runs in its session's workspace (--cwd); spill files under the sessions root
        _entry("bash", "bash-local", {"sessionFiles": _sessions_root(settings, portable)}),
        _entry("tool-bash", "tool-bash"),
        _entry("fs", "fs-local"),  # each session's files, in its workspace (--cwd)
        _entry("tool-fs", "tool-fs"),
        # modes, approvals and the settings file's rules around every tool call; plan mode on top
        _entry("permissions", "permissions", dict(settings.permissions) if settings.permissions else None),
        _entry("plan-mode", "plan-mode"),
        _entry("workspace-instructions", "workspace-instructions"),  # AGENTS.md of each session's workspace
        _entry("subagent", "subagent"),  # sub-agents, foreground and background (one level deep)
    ]
    if settings.mcp_servers:
        entries.append(_entry("mcp", "mcp", {"servers": settings.mcp_servers}))
    entries += [
        _entry("agent-loop", "agent-loop", {"agents": [], "maxSteps": DEFAULT_MAX_STEPS}),
        _entry("llm-retry", "llm-retry"),
        _entry("llm-admission", "llm-admission"),  # many agents' requests start a few at a time
        _entry("compaction", "compaction"),
        _persistence(settings, portable),
    ]
    if exporter_requested(os.environ):  # OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_TRACES_EXPORTER, ...: send spans
        entries.append(_entry("otel", "otel", {"providerName": settings.provider}))
    model = profile_model(settings)
    if settings.demo:
        entries.append(_entry("model", "dsh.plugins.demo", {"models": [model]}))
    elif settings.provider == "openai":
        openai = {"models": [model], "apiKeyEnv": settings.key_env, "baseURLEnv": settings.base_url_env}
        if not os.environ.get(settings.base_url_env):
            openai["baseURL"] = OPENAI_PUBLIC_BASE_URL
        entries.append(_entry("model", "llm-openai", openai))
    else:
        from dsh.adapters.deepseek import DEFAULT_MODELS

        models = list(DEFAULT_MODELS)
        if model not in models:
            models.append(model)
        entries.append(_entry("model", "llm-deepseek", {"models": models}))
    return entries


def _profile_label(settings: Settings, purpose: Purpose) -> str:
    if purpose == "storage":
        return "the built-in storage profile"
    if settings.demo:
        return "the built-in demo profile"
    return "the built-in openai profile" if settings.provider == "openai" else "the built-in default profile"


def render_tree(entries: list[dict[str, Any]], label: str) -> str:
    """``entries`` as a YAML plugin tree the loader boots, under a comment naming ``label``."""
    import yaml

    head = (
        f"# {label} of dsh, as `dsh config` prints it.\n"
        "# Save it to a file, edit it, and boot it with `dsh --config FILE ...`.\n"
        "# Paths take ~ and ${NAME}, expanded where the tree boots; a relative path is relative to this file.\n"
    )
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's emitter when present: same text, faster
    body: str = yaml.dump(entries, Dumper=dumper, sort_keys=False, allow_unicode=True, default_flow_style=False)
    return head + body


def resolve_tree(
    settings: Settings,
    purpose: Purpose = "agent",
    *,
    need_key: bool = True,
    writes: bool = False,
    portable: bool = False,
) -> Tree:
    """The tree a command boots: ``--config``'s file, else the built-in profile.

    Raises :class:`CliError` when the file cannot be read, and (status 2, with
    :data:`NO_MODEL_HELP`) when an agent tree is the default profile, ``need_key`` is
    set and no API key is (``dsh config`` prints the profile without one). With
    ``writes`` (a command that writes sessions), the built-in profile's JSONL sessions
    root must be writable (:func:`~dsh.cli.settings.check_sessions_root`), before any
    model is asked. ``portable`` selects the printed spelling of the built-in profile's
    paths (see :func:`profile_entries`).
    """
    if settings.config is not None:
        try:
            text = settings.config.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise CliError(f"cannot read --config {settings.config}: {error}; give a readable YAML file") from error
        return Tree(str(settings.config), text, settings.config, settings.model)
    if need_key and purpose == "agent" and not settings.demo and not settings.has_api_key:
        raise CliError(NO_OPENAI_KEY_HELP if settings.provider == "openai" else NO_MODEL_HELP, 2)
    if writes and settings.store is None:
        check_sessions_root(settings.sessions_root)
    entries = tuple(profile_entries(settings, purpose, portable=portable))
    model = profile_model(settings) if purpose == "agent" else None
    return Tree(_profile_label(settings, purpose), None, None, model, entries)
