"""The tool-argument schema DSL and its runtime validation (SPEC §6.3).

A :data:`SchemaSpec` maps property names to :class:`SchemaProp` descriptions::

    {"path": {"type": "string", "required": True, "description": "file to read"},
     "limit": {"type": "number", "default": 100}}

:func:`schema_spec_to_json_schema` turns it into standard JSON Schema for the
model; :func:`validate_args` checks the arguments a model actually sent and lists
every violation as a readable sentence. Validation is JSON-typed: a bool is not a
number, JSON ``null`` is a present value of the wrong type (never "absent"), extra
keys are allowed and defaults are not applied.
"""

from __future__ import annotations

import json
from typing import Any, Literal, Required, TypeAlias, TypedDict

from dsh.core.errors import assert_never

SchemaType: TypeAlias = Literal["string", "number", "boolean", "object", "array"]
"""The closed set of property types; anything else is a programming error."""

SCHEMA_TYPES: tuple[SchemaType, ...] = ("string", "number", "boolean", "object", "array")


class SchemaProp(TypedDict, total=False):
    """One property. ``properties`` applies to objects, ``items`` to arrays.

    ``enum`` lists the allowed values of a string, number or boolean property
    (compared strictly, so only strings can match); an empty list allows nothing.
    """

    type: Required[SchemaType]
    required: bool
    description: str
    enum: list[str]
    default: Any
    properties: SchemaSpec
    items: SchemaProp


SchemaSpec: TypeAlias = dict[str, SchemaProp]


def _prop_to_json_schema(prop: SchemaProp) -> dict[str, Any]:
    out: dict[str, Any] = {"type": prop["type"]}
    if prop.get("description"):
        out["description"] = prop["description"]
    if "enum" in prop:
        out["enum"] = list(prop["enum"])
    if "default" in prop:
        out["default"] = prop["default"]
    if prop["type"] == "object" and "properties" in prop:
        nested = schema_spec_to_json_schema(prop["properties"])
        out["properties"] = nested["properties"]
        if "required" in nested:
            out["required"] = nested["required"]
    if prop["type"] == "array" and "items" in prop:
        out["items"] = _prop_to_json_schema(prop["items"])
    return out


def schema_spec_to_json_schema(spec: SchemaSpec) -> dict[str, Any]:
    """``{"type": "object", "properties": ..., "required"?: [...]}`` for ``spec``.

    Per property the keys are ``type``, ``description`` (only if non-empty),
    ``enum`` (if given, even empty), ``default`` (if given, even None), then
    ``properties``/``required`` for an object with properties or ``items`` for an
    array with items. ``required`` lists the ``required: True`` keys in order and is
    omitted when empty. Total over well-formed specs; unknown types pass through.
    """
    properties = {key: _prop_to_json_schema(prop) for key, prop in spec.items()}
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = [key for key, prop in spec.items() if prop.get("required")]
    if required:
        schema["required"] = required
    return schema


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _in_enum(value: object, allowed: list[str]) -> bool:
    """Strict membership: no bool/number confusion (``True`` never equals ``1``)."""
    return any(isinstance(item, bool) is isinstance(value, bool) and item == value for item in allowed)


def _check_value(prop: SchemaProp, value: object, path: str, violations: list[str]) -> None:
    kind = prop["type"]
    if kind == "object":
        if not isinstance(value, dict):
            violations.append(f'"{path}" must be an object')
        elif "properties" in prop:
            _check_spec(prop["properties"], value, f"{path}.", violations)
        return
    if kind == "array":
        if not isinstance(value, list):
            violations.append(f'"{path}" must be an array')
        elif "items" in prop:
            for index, item in enumerate(value):
                _check_value(prop["items"], item, f"{path}[{index}]", violations)
        return
    if kind == "string":
        matches = isinstance(value, str)
    elif kind == "number":
        matches = _is_number(value)
    elif kind == "boolean":
        matches = isinstance(value, bool)
    else:
        assert_never(kind, "validate_args")
    if not matches:
        violations.append(f'"{path}" must be a {kind}')
    elif "enum" in prop and not _in_enum(value, prop["enum"]):
        shown = json.dumps(prop["enum"], ensure_ascii=False, separators=(",", ":"))
        violations.append(f'"{path}" must be one of {shown}')


def _check_spec(spec: SchemaSpec, args: dict[Any, Any], prefix: str, violations: list[str]) -> None:
    for key, prop in spec.items():
        path = f"{prefix}{key}"
        if key not in args:
            if prop.get("required"):
                violations.append(f'missing required property "{path}"')
            continue
        _check_value(prop, args[key], path, violations)


def validate_args(spec: SchemaSpec, args: object) -> list[str]:
    """Every way ``args`` violates ``spec``, in spec order; ``[]`` when valid.

    Total over any input: it never raises, except ``HarnessError`` (code
    ``UNREACHABLE``) for a property type outside :data:`SchemaType` met while
    checking a present value — a bug in the spec, not in the arguments. Nested
    paths read ``config.host`` and ``servers[1].host``.
    """
    if not isinstance(args, dict):
        return ['"arguments" must be an object']
    violations: list[str] = []
    _check_spec(spec, args, "", violations)
    return violations
