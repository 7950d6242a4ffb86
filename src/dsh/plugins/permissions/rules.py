"""Permission rules: ``allow`` / ``deny`` patterns over tool calls, and the scope an "always" grants.

A rule is ``TOOL`` or ``TOOL(ARGUMENT)``; both parts are shell-style patterns
(``*``, ``?``, ``[...]``) matched case-sensitively:

* ``read`` matches every call of ``read``; ``mcp__github__*`` every tool of that MCP server;
* ``bash(git status*)`` matches bash calls whose command starts with ``git status``;
* ``write(src/*)`` / ``read(/etc/*)`` match file tools by their path (as given, relative to
  the workspace, or absolute).

A call's *subject* is its ``command`` argument, else its path (``file_path``, else ``path``). For bash,
an ``allow`` rule with an argument matches only a simple command: one with a shell
operator (``;``, ``&``, ``|``, ``<``, ``>``, a backquote, ``$(``, a newline) could run
something else after the allowed prefix, so it is asked as usual; a ``deny`` rule
matches when the whole command or any of its ``;``/``&``/``|``/newline-separated parts
matches. A grant ("allow always") is a rule too, added for the rest of the session.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase

_RULE = re.compile(r"^([A-Za-z0-9_.*?\[\]-]+)(?:\((.*)\))?$", re.DOTALL)
_SHELL_OPERATORS = re.compile(r"[;&|<>`\n]|\$\(")
_SEGMENTS = re.compile(r"[;&|\n]+")


@dataclass(frozen=True)
class Rule:
    """A parsed rule: ``tool`` and ``argument`` (None: any call of the tool) patterns; ``text`` as written."""

    text: str
    tool: str
    argument: str | None


def parse_rule(text: str) -> Rule:
    """Parse ``TOOL`` or ``TOOL(ARGUMENT)``; raises ``ValueError`` naming the expected form."""
    match = _RULE.match(text.strip())
    if match is None or match.group(2) == "":
        raise ValueError(
            f"the permission rule {text!r} is not TOOL or TOOL(PATTERN): write e.g. read, bash(git status*), "
            "write(src/*) or mcp__server__*"
        )
    return Rule(text=text.strip(), tool=match.group(1), argument=match.group(2))


@dataclass(frozen=True)
class Subject:
    """What rules match a call against: the tool, and its command or path in the spellings a rule may use."""

    tool: str
    values: tuple[str, ...] = ()
    command: bool = False

    @property
    def text(self) -> str | None:
        """The subject as the model gave it (None: the call has none)."""
        return self.values[0] if self.values else None


def subject_of(tool: str, arguments: object, path_spellings: tuple[str, ...] = ()) -> Subject:
    """The subject of a call: its ``command``, else its ``path`` (plus ``path_spellings``: absolute, relative)."""
    if isinstance(arguments, dict):
        command = arguments.get("command")
        if isinstance(command, str):
            return Subject(tool, (command.strip(),), command=True)
        path = path_argument(arguments)
        if path is not None:
            return Subject(tool, tuple(dict.fromkeys((path, *path_spellings))))
    return Subject(tool)


PATH_KEYS = ("file_path", "path")
"""The argument names a file tool's path goes by (the first one present counts)."""


def path_argument(arguments: object) -> str | None:
    """The call's path argument (``file_path``, else ``path``), or None."""
    if isinstance(arguments, dict):
        for key in PATH_KEYS:
            value = arguments.get(key)
            if isinstance(value, str):
                return value
    return None


def matches(rule: Rule, subject: Subject, *, deny: bool = False) -> bool:
    """True when ``rule`` covers the call (see the module docstring for bash commands)."""
    if not fnmatchcase(subject.tool, rule.tool):
        return False
    if rule.argument is None:
        return True
    pattern = rule.argument
    if subject.command:
        command = subject.values[0]
        if deny:
            parts = [part.strip() for part in _SEGMENTS.split(command)]
            return any(fnmatchcase(part, pattern) for part in (command, *parts))
        return _SHELL_OPERATORS.search(command) is None and fnmatchcase(command, pattern)
    return any(fnmatchcase(value, pattern) for value in subject.values)


def first_match(rules: tuple[Rule, ...], subject: Subject, *, deny: bool = False) -> Rule | None:
    """The first rule covering the call, or None."""
    for rule in rules:
        if matches(rule, subject, deny=deny):
            return rule
    return None


def bash_grant(command: str) -> str:
    """The scope "always" grants for a bash command: its program and (unless an option) its first word.

    ``git push origin main`` → ``bash(git push*)``; ``ls -la`` → ``bash(ls*)``.
    """
    words = command.split()
    prefix = words[:1]
    if len(words) > 1 and re.fullmatch(r"[A-Za-z0-9_.:/-]+", words[1]) and not words[1].startswith("-"):
        prefix = words[:2]
    return f"bash({' '.join(prefix)}*)"


def path_grant(tool: str, path: str) -> str:
    """The scope "always" grants for a path: the tool under the path's directory (``read(/etc/*)``)."""
    return f"{tool}({os.path.dirname(path).rstrip(os.sep)}{os.sep}*)"
