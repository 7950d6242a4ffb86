"""The tool vocabulary: definitions, executions and their results (SPEC §6.1).

These are in-process dataclasses. :meth:`ToolExecutionResult.to_json` gives the
wire shape ``{callId, content, isError[, error]}`` in that key order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypedDict

from dsh.core.llm.types import ContentBlock
from dsh.core.tools.presentation import ToolCallPresentation, ToolResultPresentation
from dsh.kernel import AbortSignal


class ToolErrorInfo(TypedDict):
    """The structured part of a failure caused by a ``HarnessError``: its class name and code."""

    name: str
    code: str


@dataclass
class ToolExecution:
    """One call of a tool, as the model asked for it.

    ``arguments`` is the parsed JSON (any value: the loop passes the raw string when
    it is not valid JSON). ``agent`` is the calling agent, or None outside an agent.
    ``signal`` fires when the call should stop; tools observe it cooperatively.
    Listeners of ``tools/execute`` may mutate the execution before calling ``next()``.
    """

    call_id: str
    name: str
    arguments: Any
    agent: object | None = None
    signal: AbortSignal | None = None


@dataclass
class ToolResult:
    """What ``present_result`` receives: the result content and whether it is an error."""

    content: list[ContentBlock]
    is_error: bool


ToolExecute = Callable[[Any, ToolExecution], Awaitable[list[ContentBlock]]]
"""``execute(arguments, execution) -> content``; a raise becomes an error result."""

PresentCall = Callable[[Any], ToolCallPresentation | None]
"""``present_call(arguments)``: pure display hook; None means "present generically"."""

PresentResult = Callable[[Any, ToolResult], ToolResultPresentation | None]
"""``present_result(arguments, result)``: pure display hook; None means "show the raw result"."""


@dataclass
class ToolDefinition:
    """A tool: its model-facing schema plus how to run and present it.

    ``parameters`` is a JSON Schema object. ``strict`` is announced to the model
    only when it is not None. ``execute`` / ``present_call`` / ``present_result``
    never reach the model.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    execute: ToolExecute
    present_call: PresentCall | None = None
    present_result: PresentResult | None = None
    strict: bool | None = None


@dataclass
class ToolExecutionResult:
    """The outcome of one call. ``error`` is set only when a ``HarnessError`` caused the failure."""

    call_id: str
    content: list[ContentBlock]
    is_error: bool
    error: ToolErrorInfo | None = None

    def to_json(self) -> dict[str, Any]:
        """The wire shape ``{callId, content, isError[, error]}``; ``error`` absent when None."""
        value: dict[str, Any] = {"callId": self.call_id, "content": self.content, "isError": self.is_error}
        if self.error is not None:
            value["error"] = self.error
        return value
