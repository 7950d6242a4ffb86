"""How a tool call looks to a human, independent of any UI (SPEC §6.1).

A tool may describe its calls and results for display (an ACP editor card, a
terminal line). Presenters are pure and display-only: they run again when a
session is replayed, so they must not act, and they never reach the model.

The presentations are immutable values (frozen ``msgspec.Struct`` values, content
as a tuple of blocks), built by the tool and read by front ends. They are display
values, never written to the log or the wire as they are, so ``None`` means
"absent" throughout: a front end omits a field that is None (ACP writes
``rawInput`` only when it is not None), so there is no way, and no need, to
present an explicit JSON ``null``.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

from msgspec import Struct

from dsh.core.llm.types import ContentBlock

ToolCallKind: TypeAlias = Literal["read", "edit", "delete", "move", "search", "execute", "fetch", "other"]


class ToolTerminal(Struct, frozen=True):
    """A terminal card: the call side gives ``cwd``; the result side gives ``output``
    and, when known, exactly one of ``exit_code`` / ``signal``.

    Raises ``ValueError`` if both ``exit_code`` and ``signal`` are given.
    """

    cwd: str | None = None
    output: str | None = None
    exit_code: int | None = None
    signal: str | None = None

    def __post_init__(self) -> None:
        if self.exit_code is not None and self.signal is not None:
            raise ValueError(
                "a ToolTerminal reports how the process ended by exit_code or by signal, not both: "
                "leave one of them None"
            )


class ToolLocation(Struct, frozen=True):
    """A file a call touches (an editor can follow it): ``path`` as the tool got it
    (a front end resolves a relative one against the session cwd), ``line`` 1-based or None."""

    path: str
    line: int | None = None


class ToolDiff(Struct, frozen=True):
    """A change to one file: ``old_text`` None for a file created, else the text replaced by ``new_text``.

    The texts may be the whole file or only the changed region (with some context)."""

    path: str
    new_text: str
    old_text: str | None = None


class ToolCallPresentation(Struct, frozen=True):
    """How to show a call; ``title`` is required, everything else optional (None = absent)."""

    title: str
    kind: ToolCallKind | None = None
    raw_input: Any = None
    content: tuple[ContentBlock, ...] | None = None
    terminal: ToolTerminal | None = None
    locations: tuple[ToolLocation, ...] | None = None


class ToolResultPresentation(Struct, frozen=True):
    """How to show a result; None fields fall back to the raw result."""

    title: str | None = None
    content: tuple[ContentBlock, ...] | None = None
    terminal: ToolTerminal | None = None
    diffs: tuple[ToolDiff, ...] | None = None
