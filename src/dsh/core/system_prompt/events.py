"""The ``system-prompt/*`` event catalog (SPEC §5)."""

from __future__ import annotations

from collections.abc import Awaitable

from dsh.core.system_prompt.assembly import PromptAssembly
from dsh.kernel import EmitEvent, WaterfallEvent

SYSTEM_PROMPT_ASSEMBLE: WaterfallEvent[[PromptAssembly], Awaitable[PromptAssembly]] = WaterfallEvent(
    "system-prompt/assemble",
    doc=(
        "Waterfall over a fresh assembly: listeners get (assembly, next) and return an awaitable "
        "of the assembly. Edit its lists (the sections and schemas in them are immutable: replace "
        "one to change it) then return next() to cooperate; return another assembly without "
        "calling next() to replace the result for this call only."
    ),
)
"""See ``doc``: ``(assembly, next) -> Awaitable[PromptAssembly]``."""

SYSTEM_PROMPT_CHANGE: EmitEvent[[]] = EmitEvent(
    "system-prompt/change",
    doc=(
        "Emitted (no arguments) after a section or tool provider is added or removed. A listener "
        "that raises makes the registration fail and be rolled back."
    ),
)
"""See ``doc``: emitted with no arguments whenever the contributions change."""
