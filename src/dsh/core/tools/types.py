"""The tool vocabulary: definitions, executions and their results (SPEC §6.1).

:class:`ToolResult` and :class:`ToolExecutionResult` are immutable values (frozen
``msgspec.Struct`` values, content as a tuple of blocks); encoded, a result is its wire
shape ``{callId, content, isError[, error]}`` in that key order
(``dsh.core.llm.encode`` / ``to_json``). :class:`ToolDefinition` holds callables, so
it is a frozen dataclass; :class:`ToolExecution` stays mutable on purpose (a
``tools/execute`` listener may rewrite it before delegating).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from msgspec import UNSET, Struct, UnsetType

from dsh.core.llm.types import CallId, ContentBlock, ToolSchema
from dsh.core.session.types import ToolErrorInfo
from dsh.core.tools.presentation import ToolCallPresentation, ToolResultPresentation
from dsh.kernel import AbortSignal


@dataclass
class ToolExecution:
    """One call of a tool, as the model asked for it.

    ``arguments`` is the parsed JSON (any value: the loop passes the raw string when
    it is not valid JSON). ``agent`` is the calling agent, or None outside an agent.
    ``signal`` fires when the call should stop; tools observe it cooperatively.
    Listeners of ``tools/execute`` may mutate the execution before calling ``next()``.
    """

    call_id: CallId
    name: str
    arguments: Any
    agent: object | None = None
    signal: AbortSignal | None = None


class ToolResult(Struct, frozen=True, rename="camel"):
    """What ``present_result`` receives: the result content and whether it is an error."""

    content: tuple[ContentBlock, ...]
    is_error: bool


class ToolExecutionResult(Struct, frozen=True, rename="camel"):
    """The outcome of one call. ``error`` is set only when a ``HarnessError`` caused the failure.

    A ``tools/execute`` listener that wants a different outcome returns a new value
    (``msgspec.structs.replace(result, ...)``); results are never edited in place.
    """

    call_id: CallId
    content: tuple[ContentBlock, ...]
    is_error: bool
    error: ToolErrorInfo | UnsetType = UNSET


ToolExecute = Callable[[Any, ToolExecution], Awaitable[Sequence[ContentBlock]]]
"""``execute(arguments, execution) -> content``; a raise becomes an error result.

The content may be a tuple or a list; the registry stores it as a tuple.
"""

PresentCall = Callable[[Any], ToolCallPresentation | None]
"""``present_call(arguments)``: pure display hook; None means "present generically"."""

PresentResult = Callable[[Any, ToolResult], ToolResultPresentation | None]
"""``present_result(arguments, result)``: pure display hook; None means "show the raw result"."""


@dataclass(frozen=True)
class ToolDefinition:
    """A tool: its model-facing schema plus how to run and present it.

    ``parameters`` is a JSON Schema object, shared with every schema announced for
    the tool (do not mutate it once defined). ``strict`` is announced to the model
    only when set. ``execute`` / ``present_call`` / ``present_result`` /
    ``concurrency_safe`` never reach the model.

    ``concurrency_safe`` is the tool's promise that any call of it may run at the
    same time as other calls of concurrency-safe tools (a read-only tool that keeps
    no state a sibling call could see half-changed). The loop then runs consecutive
    such calls of one step together; every other call is a barrier that runs alone.
    The default, False, is always correct.

    ``read_only`` is the tool's promise that a call changes no file and nothing
    outside the harness's own state (it reads, searches, or looks at its own
    background tasks). The permissions policy lets such calls run in every mode,
    plan mode included; paths outside the workspace are still checked. The default,
    False, makes every call go through the mode's rules.

    ``fs_writes`` is the tool's promise that it changes nothing but files, and only
    through the ``fs`` service (whose workspace fence and write gate apply): the
    permissions policy then lets it run in ``workspace-write`` mode. A tool that
    makes neither promise may do anything and needs ``full-access`` (or an answer).
    """

    name: str
    description: str
    parameters: dict[str, Any]
    execute: ToolExecute
    present_call: PresentCall | None = None
    present_result: PresentResult | None = None
    strict: bool | UnsetType = UNSET
    concurrency_safe: bool = False
    read_only: bool = False
    fs_writes: bool = False

    @cached_property
    def schema(self) -> ToolSchema:
        """The model-facing part, built by allowlist: ``{name, description, parameters[, strict]}``.

        Built once per definition and shared by every caller (it is immutable).
        """
        return ToolSchema(name=self.name, description=self.description, parameters=self.parameters, strict=self.strict)
