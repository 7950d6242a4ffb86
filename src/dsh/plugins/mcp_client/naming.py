"""The model-facing name of an MCP tool: ``mcp__<server>__<tool>``.

Model providers accept function names of at most 64 characters from
``[A-Za-z0-9_-]``, while MCP allows longer names with dots and more. A name that
already fits is used as it is; otherwise the offending characters become ``_``, the
result is cut short, and 12 hex digits of a SHA-256 over the (server, tool) pair are
appended, so two different tools never share a public name. The name depends on
nothing but that pair: restarting a server or adding another never renames a tool.
"""

from __future__ import annotations

import hashlib
import re

MAX_TOOL_NAME = 64
"""The longest function name the model providers accept."""

PREFIX = "mcp__"
"""What every MCP tool's public name starts with."""

_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_HASH_DIGITS = 12


def public_tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, made safe and unique as the module docstring says."""
    joined = f"{PREFIX}{server}__{tool}"
    safe = _INVALID.sub("_", joined)
    if safe == joined and len(safe) <= MAX_TOOL_NAME:
        return safe
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:_HASH_DIGITS]
    return f"{safe[: MAX_TOOL_NAME - _HASH_DIGITS - 1]}_{digest}"
