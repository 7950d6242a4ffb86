"""Pythonic tool authoring: a tool from a typed async function or a pydantic model.

::

    async def read_file(path: str, limit: int = 100) -> str:
        \"\"\"Read a text file.\"\"\"
        ...

    registry.register(tool_from_function(read_file))

The JSON Schema comes from pydantic: ``required`` lists the parameters without
defaults, titles are dropped, ``$ref``s are inlined (recursive models are refused),
and ``strict=True`` adds ``additionalProperties: false`` to every object with
properties that does not already say otherwise (a model configured with
``extra="allow"`` keeps ``true``). Each call
is validated by pydantic in strict JSON mode, so arguments are checked as the JSON
the model sent (a bool is not an integer, ``"5"`` is not a number) while ``Path``,
``Enum`` or ``datetime`` fields still accept their JSON spelling. Extra keys follow
the model's ``extra`` setting (ignored by default, and always by
``tool_from_function``). A ``ValidationError`` becomes :class:`ToolArgsError` whose
violations read like those of :func:`validate_args` (``missing required property
"path"``, ``"limit" must be an integer``). The body may return a ``str`` (one text
block) or a tuple (or list) of content blocks.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

from msgspec import UNSET, UnsetType
from pydantic import BaseModel, Field, ValidationError, create_model
from pydantic_core import ErrorDetails

from dsh.core.errors import ToolArgsError
from dsh.core.llm.types import ContentBlock, text
from dsh.core.tools.types import ToolDefinition, ToolExecution

M = TypeVar("M", bound=BaseModel)

ToolReturn = str | Sequence[ContentBlock]
"""What an authored tool body returns: text, or content blocks (a tuple or a list)."""

_TYPE_NAMES: dict[str, str] = {
    "string_type": "a string",
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "a boolean",
    "dict_type": "an object",
    "model_type": "an object",
    "list_type": "an array",
    "tuple_type": "an array",
}
"""Sentences for the type errors strict JSON validation reports; others keep pydantic's text."""

_SCHEMA_MAPS = ("properties", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_NODES = ("items", "additionalProperties", "not")


# --------------------------------------------------------------------- schema
def _schema_node(node: object, defs: Mapping[str, Any], seen: tuple[str, ...], strict: bool) -> Any:
    if not isinstance(node, dict):
        return node  # a boolean schema such as additionalProperties: true
    if "$ref" in node:
        ref = str(node["$ref"]).rsplit("/", 1)[-1]
        if ref in seen:
            raise ValueError(
                f'tool arguments cannot use the recursive model "{ref}": '
                "flatten it or accept a plain dict/list for the recursive part"
            )
        target = _schema_node(defs[ref], defs, (*seen, ref), strict)
        siblings = {key: value for key, value in node.items() if key != "$ref"}
        return {**target, **_schema_node(siblings, defs, seen, strict)}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("title", "$defs"):
            continue
        if key in _SCHEMA_MAPS:
            out[key] = {name: _schema_node(child, defs, seen, strict) for name, child in value.items()}
        elif key in _SCHEMA_LISTS:
            out[key] = [_schema_node(child, defs, seen, strict) for child in value]
        elif key in _SCHEMA_NODES:
            out[key] = _schema_node(value, defs, seen, strict)
        else:
            out[key] = value
    if strict and out.get("type") == "object" and "properties" in out:
        out.setdefault("additionalProperties", False)
    return out


def model_parameters(model: type[BaseModel], *, strict: bool = False) -> dict[str, Any]:
    """The tool ``parameters`` JSON Schema for ``model`` (see the module docstring).

    Raises ``ValueError`` for a recursive model.
    """
    raw = model.model_json_schema()
    cleaned = _schema_node(raw, raw.get("$defs", {}), (), strict)
    schema: dict[str, Any] = {"type": "object", "properties": cleaned.get("properties", {})}
    if cleaned.get("required"):
        schema["required"] = cleaned["required"]
    if "additionalProperties" in cleaned:
        schema["additionalProperties"] = cleaned["additionalProperties"]
    return schema


# ----------------------------------------------------------------- validation
def _path(location: tuple[int | str, ...], args: object, missing: bool) -> str:
    """A readable path (``servers[1].host``) that skips pydantic's union tags."""
    path = ""
    current = args
    last = len(location) - 1
    for position, item in enumerate(location):
        if isinstance(item, int) and isinstance(current, list) and 0 <= item < len(current):
            path += f"[{item}]"
            current = current[item]
        elif isinstance(item, str) and isinstance(current, dict) and item in current:
            path += f".{item}" if path else item
            current = current[item]
        elif isinstance(item, str) and missing and position == last:
            path += f".{item}" if path else item
    return path


def _violation(error: ErrorDetails, args: object) -> str:
    kind = error["type"]
    path = _path(tuple(error["loc"]), args, kind == "missing")
    if kind == "missing":
        return f'missing required property "{path}"'
    if kind == "extra_forbidden":
        return f'unexpected property "{path}"'
    where = f'"{path or "arguments"}"'
    if kind in _TYPE_NAMES:
        return f"{where} must be {_TYPE_NAMES[kind]}"
    expected = error.get("ctx", {}).get("expected")
    if kind in ("literal_error", "enum") and isinstance(expected, str):
        return f"{where} must be {expected}"
    return f"{where}: {error['msg']}"


def parse_model_args(model: type[M], args: object) -> M:
    """Validate the JSON ``args`` against ``model`` (strict JSON mode).

    Raises :class:`ToolArgsError` listing every violation; values that are not
    JSON at all (only possible from Python callers) are one violation too.
    """
    try:
        encoded = json.dumps(args, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ToolArgsError(['"arguments" must be JSON']) from error
    try:
        return model.model_validate_json(encoded, strict=True)
    except ValidationError as error:
        violations = list(dict.fromkeys(_violation(detail, args) for detail in error.errors()))
        raise ToolArgsError(violations) from error


def as_content(tool: str, value: object) -> tuple[ContentBlock, ...]:
    """A body's return value as content: ``str`` → one text block, a tuple passes through, a list becomes one.

    Raises ``TypeError`` for anything else.
    """
    if isinstance(value, str):
        return (text(value),)
    if isinstance(value, tuple):
        return value
    if isinstance(value, list):
        return tuple(value)
    raise TypeError(
        f'tool "{tool}" returned {type(value).__name__}: return a str or a tuple (or list) of content blocks'
    )


# -------------------------------------------------------------------- authoring
def define_model_tool(
    name: str,
    description: str,
    args_model: type[M],
    execute: Callable[[M, ToolExecution], Awaitable[ToolReturn]],
    *,
    strict: bool | UnsetType = UNSET,
    concurrency_safe: bool = False,
    read_only: bool = False,
    fs_writes: bool = False,
) -> ToolDefinition:
    """A tool whose arguments are ``args_model``; ``execute(parsed, execution)`` gets an instance.

    Invalid arguments raise :class:`ToolArgsError` before ``execute`` runs.
    ``strict`` is announced only when given; ``concurrency_safe``, ``read_only`` and
    ``fs_writes`` are the :class:`ToolDefinition` flags. Raises ``ValueError`` for a recursive model.
    """
    parameters = model_parameters(args_model, strict=strict is True)

    async def run(args: Any, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        parsed = parse_model_args(args_model, args)
        return as_content(name, await execute(parsed, execution))

    return ToolDefinition(
        name=name,
        description=description,
        parameters=parameters,
        execute=run,
        strict=strict,
        concurrency_safe=concurrency_safe,
        read_only=read_only,
        fs_writes=fs_writes,
    )


def tool_from_function(
    fn: Callable[..., Awaitable[ToolReturn]],
    *,
    name: str | None = None,
    description: str | None = None,
    strict: bool | UnsetType = UNSET,
    concurrency_safe: bool = False,
    read_only: bool = False,
    fs_writes: bool = False,
) -> ToolDefinition:
    """A tool from a typed ``async def``; its parameters are the tool's arguments.

    ``name`` defaults to the function's name and ``description`` to its docstring;
    ``concurrency_safe``, ``read_only`` and ``fs_writes`` are the :class:`ToolDefinition` flags.
    Parameters without a default are required; ``Annotated[T, Field(description=...)]``
    documents one. A parameter annotated :class:`ToolExecution` receives the call
    itself (id, agent, abort signal) and is not shown to the model.

    Raises ``TypeError`` for a non-async function, ``*args``/``**kwargs``,
    positional-only or unannotated parameters, and ``ValueError`` when there is
    no description.
    """
    label = getattr(fn, "__qualname__", repr(fn))
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"tool function {label} must be defined with async def")
    tool_name = name if name is not None else fn.__name__
    doc = description if description is not None else inspect.getdoc(fn)
    if not doc:
        raise ValueError(f'tool "{tool_name}" has no description: give {label} a docstring or pass description=')
    hints = typing.get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    parameters: dict[str, str] = {}
    execution_parameter: str | None = None
    for parameter in inspect.signature(fn).parameters.values():
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            raise TypeError(
                f'parameter "{parameter.name}" of tool function {label} is {parameter.kind.description}: '
                "use named parameters, which become the tool's arguments"
            )
        if parameter.name not in hints:
            raise TypeError(f'parameter "{parameter.name}" of tool function {label} needs a type annotation')
        annotation = hints[parameter.name]
        if annotation is ToolExecution:
            execution_parameter = parameter.name
            continue
        field = f"f{len(fields)}"
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[field] = (annotation, Field(default, alias=parameter.name))
        parameters[field] = parameter.name
    model: type[BaseModel] = create_model(f"{tool_name}_arguments", **fields)
    schema = model_parameters(model, strict=strict is True)

    async def run(args: Any, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        parsed = parse_model_args(model, args)
        kwargs = {parameter: getattr(parsed, field) for field, parameter in parameters.items()}
        if execution_parameter is not None:
            kwargs[execution_parameter] = execution
        return as_content(tool_name, await fn(**kwargs))

    return ToolDefinition(
        name=tool_name,
        description=doc,
        parameters=schema,
        execute=run,
        strict=strict,
        concurrency_safe=concurrency_safe,
        read_only=read_only,
        fs_writes=fs_writes,
    )
