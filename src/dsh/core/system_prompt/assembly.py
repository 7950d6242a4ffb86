"""What the model is told: ordered prompt sections plus tool schemas (SPEC §5).

:class:`PromptSection` is an immutable value (a frozen dataclass: its ``text`` may be
a callable) and a :class:`~dsh.core.llm.ToolSchema` is a frozen ``msgspec.Struct``,
so both are shared, never copied. A :class:`PromptAssembly` is built fresh for one
model call: listeners of ``system-prompt/assemble`` may reorder, add, drop or replace
its entries (its lists are its own) without touching the registry or any later
assembly. :func:`render_prompt` turns its sections into the system text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from dsh.core.llm.types import ToolSchema


@dataclass(frozen=True)
class PromptSection:
    """One named piece of the system prompt.

    ``order`` sorts sections ascending (ties keep registration order). ``text`` is
    either a string or a zero-argument callable evaluated at every render, so a
    section can reflect live state (the working directory, the time).
    """

    name: str
    order: float
    text: str | Callable[[], str]


@dataclass
class PromptAssembly:
    """The sections (sorted) and tool schemas for one model call; mutable, built per call."""

    sections: list[PromptSection] = field(default_factory=list)
    tools: list[ToolSchema] = field(default_factory=list)


def render_prompt(assembly: PromptAssembly) -> str:
    """Join the sections' texts with a blank line, dropping empty ones.

    A callable ``text`` is called at every render. A raise from it propagates.
    """
    parts: list[str] = []
    for section in assembly.sections:
        text = section.text() if callable(section.text) else section.text
        if text != "":
            parts.append(text)
    return "\n\n".join(parts)
