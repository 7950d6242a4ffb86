"""Which tools a child may call, and the model-facing requests and calls that enforce it.

A :class:`ToolFilter` is an allowlist (None: every tool) minus a denylist (the
sub-agent tools at the depth limit, and whatever the parent was denied). A child's
filter is never wider than its parent's: its allowlist must be a subset of what the
parent admits, and it inherits the parent's denials.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ToolFilter:
    """``allow`` None admits every name not in ``deny``."""

    allow: frozenset[str] | None = None
    deny: frozenset[str] = frozenset()

    def admits(self, name: str) -> bool:
        """True when a tool of that name may be shown to and called by the agent."""
        return name not in self.deny and (self.allow is None or name in self.allow)

    def narrowed(self, allow: frozenset[str] | None, deny: frozenset[str]) -> ToolFilter:
        """This filter with ``allow`` intersected (None keeps ours) and ``deny`` added."""
        if allow is None:
            allow = self.allow
        elif self.allow is not None:
            allow = allow & self.allow
        return ToolFilter(allow=allow, deny=self.deny | deny)


UNRESTRICTED = ToolFilter()
"""The filter of an agent that is not a restricted child."""
