"""SPEC §6.5 (describe ``schema DSL properties``): random specs up to depth 2."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.core.tools import SchemaProp, SchemaSpec, schema_spec_to_json_schema, validate_args

TYPES = ("string", "number", "boolean", "object", "array")
KEYS = st.text(alphabet="abcdefgh_", min_size=1, max_size=4)

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=3),
    max_leaves=8,
)
"""Any JSON value (what a model's arguments can parse to)."""


@st.composite
def props(draw: st.DrawFn, depth: int, satisfiable: bool) -> SchemaProp:
    """A random property; ``satisfiable`` keeps enums to non-empty lists on strings only."""
    kind = draw(st.sampled_from(TYPES))
    prop: dict[str, Any] = {"type": kind}
    if draw(st.booleans()):
        prop["required"] = True
    if draw(st.booleans()):
        prop["description"] = draw(st.text(max_size=5))
    if draw(st.booleans()):
        prop["default"] = draw(JSON)
    if satisfiable:
        if kind == "string" and draw(st.booleans()):
            prop["enum"] = draw(st.lists(st.text(max_size=3), min_size=1, max_size=3))
    elif draw(st.booleans()):
        prop["enum"] = draw(st.lists(st.text(max_size=3), max_size=3))
    if depth < 2 and kind == "object" and draw(st.booleans()):
        prop["properties"] = draw(specs(depth + 1, satisfiable))
    if depth < 2 and kind == "array" and draw(st.booleans()):
        prop["items"] = draw(props(depth + 1, satisfiable))
    return prop  # type: ignore[return-value]


def specs(depth: int = 0, satisfiable: bool = False) -> st.SearchStrategy[SchemaSpec]:
    return st.dictionaries(KEYS, props(depth, satisfiable), max_size=4)


@st.composite
def value_for(draw: st.DrawFn, prop: SchemaProp) -> Any:
    """A value satisfying ``prop`` (which comes from a satisfiable spec)."""
    kind = prop["type"]
    if kind == "string":
        return draw(st.sampled_from(prop["enum"])) if "enum" in prop else draw(st.text(max_size=5))
    if kind == "number":
        return draw(st.integers() | st.floats(allow_nan=False))
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "object":
        return draw(args_for(prop.get("properties", {})))
    if "items" in prop:
        return draw(st.lists(value_for(prop["items"]), max_size=3))
    return draw(st.lists(JSON, max_size=3))


@st.composite
def args_for(draw: st.DrawFn, spec: SchemaSpec) -> dict[str, Any]:
    """Arguments satisfying ``spec``: every required key, some optional ones, maybe extras."""
    args: dict[str, Any] = {
        f"extra_{key}": value for key, value in draw(st.dictionaries(KEYS, JSON, max_size=2)).items()
    }
    for key, prop in spec.items():
        if prop.get("required") or draw(st.booleans()):
            args[key] = draw(value_for(prop))
    return args


def required_everywhere_agrees(spec: SchemaSpec, schema: dict[str, Any]) -> None:
    expected = [key for key, prop in spec.items() if prop.get("required")]
    assert schema.get("required", []) == expected
    if not expected:
        assert "required" not in schema
    for key, prop in spec.items():
        node = schema["properties"][key]
        while prop["type"] == "array" and "items" in prop:
            prop, node = prop["items"], node["items"]
        if prop["type"] == "object" and "properties" in prop:
            required_everywhere_agrees(prop["properties"], node)


@settings(deadline=None)
@given(specs())
def test_json_schema_required_equals_the_required_true_keys_at_every_level(spec: SchemaSpec) -> None:
    """JSON Schema `required` equals the required:true keys at every level"""
    required_everywhere_agrees(spec, schema_spec_to_json_schema(spec))


@settings(deadline=None)
@given(specs())
def test_conversion_is_total_never_throws_for_any_spec(spec: SchemaSpec) -> None:
    """conversion is total (never throws) for any spec"""
    schema = schema_spec_to_json_schema(spec)
    assert schema["type"] == "object"
    assert list(schema["properties"]) == list(spec)


@settings(deadline=None)
@given(specs(), JSON)
def test_validate_args_is_total_never_throws_for_any_spec_and_any_input(spec: SchemaSpec, args: Any) -> None:
    """validateArgs is total (never throws) for any spec and any input"""
    violations = validate_args(spec, args)
    assert isinstance(violations, list)
    assert all(isinstance(violation, str) and violation for violation in violations)


@settings(deadline=None)
@given(st.data(), specs(satisfiable=True))
def test_the_property_testing_runtime_validation_composition_args_satisfying_the_spec_pass_validate_args(
    data: st.DataObject, spec: SchemaSpec
) -> None:
    """the property-testing ↔ runtime-validation composition: args satisfying the spec pass validateArgs"""
    args = data.draw(args_for(spec))
    assert validate_args(spec, args) == []


@settings(deadline=None)
@given(st.data(), specs(satisfiable=True).filter(lambda spec: any(p.get("required") for p in spec.values())))
def test_the_property_testing_runtime_validation_composition_dropping_a_required_key_is_always_rejected(
    data: st.DataObject, spec: SchemaSpec
) -> None:
    """the property-testing ↔ runtime-validation composition: dropping a required key is always rejected"""
    args = data.draw(args_for(spec))
    dropped = data.draw(st.sampled_from([key for key, prop in spec.items() if prop.get("required")]))
    del args[dropped]

    assert f'missing required property "{dropped}"' in validate_args(spec, args)


@settings(deadline=None)
@given(specs(), JSON.filter(lambda value: not isinstance(value, dict)))
def test_the_property_testing_runtime_validation_composition_a_non_object_top_level_is_always_rejected(
    spec: SchemaSpec, args: Any
) -> None:
    """the property-testing ↔ runtime-validation composition: a non-object top level is always rejected"""
    assert validate_args(spec, args) == ['"arguments" must be an object']
