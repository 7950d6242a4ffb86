"""The ``tools/*`` event catalog (SPEC §6.2)."""

from __future__ import annotations

from collections.abc import Awaitable

from dsh.core.tools.types import ToolExecution, ToolExecutionResult
from dsh.kernel import EmitEvent, WaterfallEvent

TOOLS_EXECUTE: WaterfallEvent[[ToolExecution], Awaitable[ToolExecutionResult]] = WaterfallEvent(
    "tools/execute",
    doc=(
        "Waterfall around every tool call: listeners get (execution, next) and return an awaitable "
        "of the result. Veto by returning a result without calling next(); wrap by awaiting next(). "
        "next() never raises for a failing tool (it resolves to an isError result); a listener's own "
        "raise becomes an isError result of the call."
    ),
)
"""See ``doc``: ``(execution, next) -> Awaitable[ToolExecutionResult]``."""

TOOLS_CHANGE: EmitEvent[[]] = EmitEvent(
    "tools/change",
    doc=(
        "Emitted (no arguments) after a tool is registered or unregistered. A listener that raises "
        "makes the registration fail and be rolled back."
    ),
)
"""See ``doc``: emitted with no arguments whenever the set of tools changes."""
