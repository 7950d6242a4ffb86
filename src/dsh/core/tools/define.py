"""``define_tool``: a typed tool from a :data:`SchemaSpec` (SPEC §6.3).

The spec becomes the model-facing JSON Schema, and the same spec validates every
call before the body runs, so the body may trust the argument types it declares.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from msgspec import UNSET, UnsetType

from dsh.core.errors import ToolArgsError
from dsh.core.llm.types import ContentBlock
from dsh.core.tools.presentation import ToolCallPresentation, ToolResultPresentation
from dsh.core.tools.schema import (
    SCHEMA_TYPES,
    SchemaProp,
    SchemaSpec,
    schema_spec_to_json_schema,
    validate_args,
)
from dsh.core.tools.types import PresentCall, PresentResult, ToolDefinition, ToolExecution, ToolResult

A = TypeVar("A")


def _check_prop(prop: SchemaProp, path: str) -> None:
    kind = prop.get("type")
    if kind not in SCHEMA_TYPES:
        raise ValueError(f'property "{path}" has type {kind!r}: use one of {", ".join(SCHEMA_TYPES)}')
    for key, nested in prop.get("properties", {}).items():
        _check_prop(nested, f"{path}.{key}")
    if "items" in prop:
        _check_prop(prop["items"], f"{path}[]")


def define_tool(
    name: str,
    description: str,
    parameters: SchemaSpec,
    execute: Callable[[A, ToolExecution], Awaitable[Sequence[ContentBlock]]],
    present_call: Callable[[A], ToolCallPresentation | None] | None = None,
    present_result: Callable[[A, ToolResult], ToolResultPresentation | None] | None = None,
    strict: bool | UnsetType = UNSET,
    concurrency_safe: bool = False,
    read_only: bool = False,
    fs_writes: bool = False,
) -> ToolDefinition:
    """Build a :class:`ToolDefinition` whose calls are validated against ``parameters``.

    ``A`` is the argument type the body declares (typically a ``TypedDict``
    mirroring the spec); the runtime guarantee behind it is :func:`validate_args`.
    ``execute`` runs only for valid arguments; otherwise the call raises
    :class:`ToolArgsError` (which the registry reports as an ``INVALID_ARGS``
    result). Presenters soft-validate: for invalid arguments they return None
    instead of running (display code runs on replayed, possibly malformed calls).
    ``strict`` is announced only when given (``False`` included);
    ``concurrency_safe``, ``read_only`` and ``fs_writes`` are the :class:`ToolDefinition` flags. The spec is
    read at every call, not copied: do not mutate ``parameters`` once defined.

    Raises ``ValueError`` at once if a property type is outside ``SchemaType``.
    """
    for key, prop in parameters.items():
        _check_prop(prop, key)

    async def run(args: Any, execution: ToolExecution) -> Sequence[ContentBlock]:
        violations = validate_args(parameters, args)
        if violations:
            raise ToolArgsError(violations)
        return await execute(args, execution)

    soft_call: PresentCall | None = None
    if present_call is not None:
        call_body = present_call

        def soft_call(args: Any) -> ToolCallPresentation | None:
            return None if validate_args(parameters, args) else call_body(args)

    soft_result: PresentResult | None = None
    if present_result is not None:
        result_body = present_result

        def soft_result(args: Any, result: ToolResult) -> ToolResultPresentation | None:
            return None if validate_args(parameters, args) else result_body(args, result)

    return ToolDefinition(
        name=name,
        description=description,
        parameters=schema_spec_to_json_schema(parameters),
        execute=run,
        present_call=soft_call,
        present_result=soft_result,
        strict=strict,
        concurrency_safe=concurrency_safe,
        read_only=read_only,
        fs_writes=fs_writes,
    )
