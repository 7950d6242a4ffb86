"""Check a plugin tree without starting it: every problem the loader would meet, listed at once.

:func:`check_tree` parses the file and its includes, resolves each plugin name
(importing its module) and validates each entry's ``config`` against the plugin's
``Config`` as the loader does (a path field's ``$NAME`` must be set; a relative
path resolves against the entry's file). It does not run any plugin, so problems
that only appear at start (a missing API key, an unreachable directory, an
``inject`` nothing provides) are found when the tree boots, not here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from dsh.kernel import KernelError, PluginEntry, describe, parse_tree, resolve_plugin, validate_config


@dataclass(frozen=True)
class TreeReport:
    """What :func:`check_tree` found: ``plugins`` counts the non-include entries, ``problems`` the faults."""

    plugins: int
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def _check_entries(entries: Iterable[PluginEntry], problems: list[str]) -> int:
    count = 0
    for entry in entries:
        if entry.is_include:
            count += _check_entries(entry.children, problems)
            continue
        count += 1
        where = f'{entry.file}: entry "{entry.id}" ({entry.name})'
        try:
            info = describe(resolve_plugin(entry.name, entry.file.parent))
            validate_config(info.name, info.config_model, entry.config, base_dir=entry.file.parent)
        except KernelError as error:
            problems.append(f"{where}: {error}")
    return count


def check_tree(path: Path) -> TreeReport:
    """Check the tree at ``path`` (see the module docstring)."""
    problems: list[str] = []
    try:
        entries = parse_tree(path)
    except KernelError as error:
        return TreeReport(0, [str(error)])
    return TreeReport(_check_entries(entries, problems), problems)
