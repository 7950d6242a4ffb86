"""SPEC §6.4, the schema DSL describes: ``defineTool / schema DSL``, ``schema DSL edge cases``,
``schema DSL regressions``, ``validateArgs``, ``defineTool validation`` and ``defineTool presentation``.

The reference's type-level titles (``InferArgs``) have no run-time counterpart in
Python: a spec is a value, not a type. Their Python form is a ``TypedDict`` the body
declares as ``define_tool``'s type parameter; mypy checks this module (see the
report), and each such test asserts the run-time guarantee behind the type:
``validate_args`` lets through exactly the shapes the ``TypedDict`` describes.
"""

# No ``from __future__ import annotations`` here: the TypedDicts below are inspected at
# run time (``__required_keys__``), which Python 3.11 computes only from real annotations.
import typing
from collections.abc import AsyncIterator
from typing import Any, NotRequired, TypedDict

import pytest

from dsh.core.errors import HarnessError, ToolArgsError
from dsh.core.llm import UNSET, ContentBlock, TextBlock, ToolSchema, text, text_of, to_json
from dsh.core.session import ToolErrorInfo
from dsh.core.tools import (
    TOOLS,
    SchemaSpec,
    ToolCallPresentation,
    ToolDefinition,
    ToolExecution,
    ToolResult,
    ToolResultPresentation,
    ToolTerminal,
    define_tool,
    schema_spec_to_json_schema,
    validate_args,
)
from dsh.kernel import Context
from tests.core.tools.helpers import boot, call


@pytest.fixture
async def root() -> AsyncIterator[Context]:
    ctx = await boot()
    yield ctx
    await ctx.dispose()


def reply(value: str) -> tuple[ContentBlock, ...]:
    return (text(value),)


def required_keys(spec: SchemaSpec) -> frozenset[str]:
    return frozenset(key for key, prop in spec.items() if prop.get("required"))


def optional_keys(spec: SchemaSpec) -> frozenset[str]:
    return frozenset(spec) - required_keys(spec)


class ShoutArgs(TypedDict):
    text: str
    upper: NotRequired[bool]


SHOUT_SPEC: SchemaSpec = {
    "text": {"type": "string", "required": True, "description": "what to say"},
    "upper": {"type": "boolean"},
}


async def shout(args: ShoutArgs, execution: ToolExecution) -> tuple[ContentBlock, ...]:
    return reply(args["text"].upper() if args.get("upper") else args["text"])


# ------------------------------------------------------------------ defineTool / schema DSL
async def test_converts_schema_spec_to_standard_json_schema_with_required_array() -> None:
    """converts SchemaSpec to standard JSON Schema with required array"""
    spec: SchemaSpec = {
        "path": {"type": "string", "required": True, "description": "file to read"},
        "limit": {"type": "number"},
        "force": {"type": "boolean", "required": True},
    }

    assert schema_spec_to_json_schema(spec) == {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "file to read"},
            "limit": {"type": "number"},
            "force": {"type": "boolean"},
        },
        "required": ["path", "force"],
    }


async def test_handles_empty_spec_no_properties_no_required() -> None:
    """handles empty spec (no properties, no required)"""
    assert schema_spec_to_json_schema({}) == {"type": "object", "properties": {}}


async def test_handles_nested_object_spec() -> None:
    """handles nested object spec"""
    spec: SchemaSpec = {
        "config": {
            "type": "object",
            "required": True,
            "properties": {"host": {"type": "string", "required": True}, "port": {"type": "number"}},
        }
    }

    assert schema_spec_to_json_schema(spec) == {
        "type": "object",
        "properties": {
            "config": {
                "type": "object",
                "properties": {"host": {"type": "string"}, "port": {"type": "number"}},
                "required": ["host"],
            }
        },
        "required": ["config"],
    }


async def test_define_tool_returns_a_valid_tool_definition_with_typed_execute() -> None:
    """defineTool returns a valid ToolDefinition with typed execute"""
    tool = define_tool("shout", "Repeat text", SHOUT_SPEC, shout)

    assert isinstance(tool, ToolDefinition)
    assert (tool.name, tool.description) == ("shout", "Repeat text")
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "what to say"},
            "upper": {"type": "boolean"},
        },
        "required": ["text"],
    }
    assert await tool.execute({"text": "hi", "upper": True}, call("shout")) == reply("HI")
    assert await tool.execute({"text": "hi"}, call("shout")) == reply("hi")


async def test_type_level_infer_args_maps_required_properties_to_non_optional() -> None:
    """type-level: InferArgs maps required properties to non-optional

    The Python form: the body's ``TypedDict`` marks ``text`` required; the run-time
    guarantee is that a call lacking it never reaches the body.
    """
    reached: list[ShoutArgs] = []

    async def body(args: ShoutArgs, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        reached.append(args)
        return reply(args["text"])

    tool = define_tool("shout", "Repeat text", SHOUT_SPEC, body)

    assert ShoutArgs.__required_keys__ == required_keys(SHOUT_SPEC) == frozenset({"text"})
    with pytest.raises(ToolArgsError):
        await tool.execute({"upper": True}, call("shout"))
    assert reached == []
    assert tool.parameters["required"] == ["text"]


async def test_registry_round_trips_a_define_tool_definition_register_schemas_execute(root: Context) -> None:
    """registry round-trips a defineTool definition (register→schemas→execute)"""

    class GreetArgs(TypedDict):
        name: str
        title: NotRequired[str]

    async def greet(args: GreetArgs, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        return reply(f"{args['name']}:{args.get('title', 'none')}")

    spec: SchemaSpec = {"name": {"type": "string", "required": True}, "title": {"type": "string"}}
    root[TOOLS].register(define_tool("greet", "Greet someone", spec, greet))

    assert root[TOOLS].schemas() == [
        ToolSchema(name="greet", description="Greet someone", parameters=schema_spec_to_json_schema(spec))
    ]
    result = await root[TOOLS].execute(call("greet", {"name": "hello"}))
    assert to_json(result) == {"callId": "c1", "content": [{"type": "text", "text": "hello:none"}], "isError": False}


async def test_still_accepts_raw_json_schema_tool_definition_directly_mcp_interop(root: Context) -> None:
    """still accepts raw JSON-Schema ToolDefinition directly (MCP interop)"""
    parameters = {
        "type": "object",
        "properties": {"query": {"type": "string", "minLength": 1}},
        "required": ["query"],
        "additionalProperties": False,
    }

    async def search(args: Any, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        return reply(f"searched {args['query']}")

    root[TOOLS].register(ToolDefinition(name="mcp_search", description="search", parameters=parameters, execute=search))

    assert root[TOOLS].schemas()[0].parameters == parameters
    assert (await root[TOOLS].execute(call("mcp_search", {"query": "x"}))).content == reply("searched x")


# -------------------------------------------------------------------- schema DSL edge cases
async def test_emits_enum_values_in_json_schema_property() -> None:
    """emits enum values in JSON Schema property"""
    spec: SchemaSpec = {"mode": {"type": "string", "enum": ["fast", "slow"]}}

    assert schema_spec_to_json_schema(spec)["properties"]["mode"] == {
        "type": "string",
        "enum": ["fast", "slow"],
    }


async def test_emits_default_value_in_json_schema_property() -> None:
    """emits default value in JSON Schema property"""
    spec: SchemaSpec = {
        "limit": {"type": "number", "default": 100},
        "note": {"type": "string", "default": None},
    }

    properties = schema_spec_to_json_schema(spec)["properties"]
    assert properties["limit"] == {"type": "number", "default": 100}
    assert properties["note"] == {"type": "string", "default": None}


async def test_handles_array_items_without_nested_properties_plain_type_array() -> None:
    """handles array items without nested properties (plain type array)"""
    spec: SchemaSpec = {"tags": {"type": "array", "items": {"type": "string"}}}

    assert schema_spec_to_json_schema(spec)["properties"]["tags"] == {
        "type": "array",
        "items": {"type": "string"},
    }


async def test_define_tool_passes_through_strict_flag_when_set_to_true(root: Context) -> None:
    """defineTool passes through strict flag when set to true"""
    tool = define_tool("shout", "Repeat text", SHOUT_SPEC, shout, strict=True)
    root[TOOLS].register(tool)

    assert tool.strict is True
    assert root[TOOLS].schemas()[0].strict is True


async def test_define_tool_omits_strict_when_not_provided(root: Context) -> None:
    """defineTool omits strict when not provided"""
    tool = define_tool("shout", "Repeat text", SHOUT_SPEC, shout)
    root[TOOLS].register(tool)

    assert tool.strict is UNSET
    assert "strict" not in to_json(root[TOOLS].schemas()[0])


async def test_define_tool_strict_false_is_included(root: Context) -> None:
    """defineTool strict=false is included"""
    root[TOOLS].register(define_tool("shout", "Repeat text", SHOUT_SPEC, shout, strict=False))

    [schema] = root[TOOLS].schemas()
    assert "strict" in to_json(schema)
    assert schema.strict is False


async def test_handles_enum_and_default_together_in_one_property() -> None:
    """handles enum and default together in one property"""
    spec: SchemaSpec = {"mode": {"type": "string", "description": "speed", "enum": ["a", "b"], "default": "a"}}

    mode = schema_spec_to_json_schema(spec)["properties"]["mode"]
    assert mode == {"type": "string", "description": "speed", "enum": ["a", "b"], "default": "a"}
    assert list(mode) == ["type", "description", "enum", "default"]


async def test_omits_description_enum_default_keys_when_not_specified() -> None:
    """omits description, enum, default keys when not specified"""
    spec: SchemaSpec = {"plain": {"type": "string"}, "blank": {"type": "string", "description": ""}}

    properties = schema_spec_to_json_schema(spec)["properties"]
    assert properties == {"plain": {"type": "string"}, "blank": {"type": "string"}}


async def test_an_empty_enum_is_still_emitted() -> None:
    """(extra) ``enum`` is emitted whenever present, even empty"""
    spec: SchemaSpec = {"never": {"type": "string", "enum": []}}

    assert schema_spec_to_json_schema(spec)["properties"]["never"] == {"type": "string", "enum": []}


async def test_handles_array_with_no_items_items_omitted() -> None:
    """handles array with no items (items omitted)"""
    spec: SchemaSpec = {"anything": {"type": "array"}}

    assert schema_spec_to_json_schema(spec)["properties"]["anything"] == {"type": "array"}


async def test_handles_nested_object_with_all_optional_properties_no_required_array() -> None:
    """handles nested object with all-optional properties (no required array)"""
    spec: SchemaSpec = {
        "opts": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}}},
        "empty": {"type": "object", "properties": {}},
        "bag": {"type": "object"},
    }

    properties = schema_spec_to_json_schema(spec)["properties"]
    assert properties["opts"] == {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "number"}},
    }
    assert properties["empty"] == {"type": "object", "properties": {}}
    assert properties["bag"] == {"type": "object"}


async def test_properties_and_items_apply_only_to_their_own_types() -> None:
    """(extra) ``properties`` on a non-object and ``items`` on a non-array are not emitted"""
    spec: SchemaSpec = {
        "s": {"type": "string", "properties": {"x": {"type": "string"}}},
        "o": {"type": "object", "items": {"type": "string"}},
    }

    assert schema_spec_to_json_schema(spec)["properties"] == {
        "s": {"type": "string"},
        "o": {"type": "object"},
    }


# ------------------------------------------------------ schema DSL regressions (review round 2)
class Server(TypedDict):
    host: str
    port: NotRequired[float]


class DeployArgs(TypedDict):
    servers: list[Server]
    note: NotRequired[str]


DEPLOY_SPEC: SchemaSpec = {
    "servers": {
        "type": "array",
        "required": True,
        "items": {
            "type": "object",
            "properties": {"host": {"type": "string", "required": True}, "port": {"type": "number"}},
        },
    },
    "note": {"type": "string"},
}


async def deploy(args: DeployArgs, execution: ToolExecution) -> tuple[ContentBlock, ...]:
    return reply(",".join(server["host"] for server in args["servers"]))


async def test_infer_args_makes_non_required_keys_genuinely_optional_omittable() -> None:
    """InferArgs makes non-required keys genuinely optional (omittable)

    Python form: ``NotRequired`` keys of the body's ``TypedDict``; at run time a
    call omitting every optional key is valid and reaches the body.
    """
    tool = define_tool("deploy", "Deploy", DEPLOY_SPEC, deploy)

    item_spec = DEPLOY_SPEC["servers"]["items"]["properties"]
    assert DeployArgs.__optional_keys__ == optional_keys(DEPLOY_SPEC) == frozenset({"note"})
    assert Server.__optional_keys__ == optional_keys(item_spec) == frozenset({"port"})
    assert validate_args(DEPLOY_SPEC, {"servers": [{"host": "a"}]}) == []
    assert await tool.execute({"servers": [{"host": "a"}]}, call("deploy")) == reply("a")


async def test_infer_args_recurses_into_array_items_including_arrays_of_objects() -> None:
    """InferArgs recurses into array items, including arrays of objects

    Python form: ``list[Server]`` in the ``TypedDict``; at run time each element is
    checked as a ``Server``.
    """
    tool = define_tool("deploy", "Deploy", DEPLOY_SPEC, deploy)
    item_spec = DEPLOY_SPEC["servers"]["items"]["properties"]

    assert typing.get_type_hints(DeployArgs)["servers"] == list[Server]
    assert Server.__required_keys__ == required_keys(item_spec) == frozenset({"host"})
    assert await tool.execute({"servers": [{"host": "a", "port": 1}, {"host": "b"}]}, call("deploy")) == reply("a,b")
    with pytest.raises(ToolArgsError) as caught:
        await tool.execute({"servers": [{"host": "a"}, {"port": 2}, "c"]}, call("deploy"))
    assert caught.value.violations == [
        'missing required property "servers[1].host"',
        '"servers[2]" must be an object',
    ]


async def test_runtime_json_schema_matches_the_array_of_objects_inference() -> None:
    """runtime JSON Schema matches the array-of-objects inference"""
    assert schema_spec_to_json_schema(DEPLOY_SPEC) == {
        "type": "object",
        "properties": {
            "servers": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"host": {"type": "string"}, "port": {"type": "number"}},
                    "required": ["host"],
                },
            },
            "note": {"type": "string"},
        },
        "required": ["servers"],
    }


# ---------------------------------------------------------------------------- validateArgs
SIMPLE_SPEC: SchemaSpec = {"a": {"type": "string", "required": True}, "b": {"type": "number"}}


async def test_returns_empty_for_valid_args_and_is_total_over_malformed_input() -> None:
    """returns [] for valid args and is total over malformed input"""
    assert validate_args(SIMPLE_SPEC, {"a": "x", "b": 1}) == []
    for malformed in (None, "a string", ["a"], 3, True):
        assert validate_args(SIMPLE_SPEC, malformed) == ['"arguments" must be an object']


async def test_flags_a_missing_required_key_and_a_required_key_present_as_undefined() -> None:
    """flags a missing required key and a required key present as undefined

    Python has no ``undefined``: an absent key is "missing", while a key present
    with JSON ``null`` (None) is a present value of the wrong type.
    """
    assert validate_args(SIMPLE_SPEC, {}) == ['missing required property "a"']
    assert validate_args(SIMPLE_SPEC, {"a": None}) == ['"a" must be a string']
    assert validate_args(SIMPLE_SPEC, {"a": "x", "b": None}) == ['"b" must be a number']


async def test_allows_extra_keys_no_additional_properties_false_and_omitted_optionals() -> None:
    """allows extra keys (no additionalProperties:false) and omitted optionals"""
    assert validate_args(SIMPLE_SPEC, {"a": "x", "extra": [1, 2], "more": None}) == []
    assert validate_args({}, {"anything": 1}) == []


async def test_does_not_apply_defaults_validation_only() -> None:
    """does not apply defaults (validation only)"""
    spec: SchemaSpec = {"limit": {"type": "number", "default": 100}}
    args: dict[str, Any] = {}

    assert validate_args(spec, args) == []
    assert args == {}


async def test_type_checks_primitives() -> None:
    """type-checks primitives"""
    spec: SchemaSpec = {
        "s": {"type": "string"},
        "n": {"type": "number"},
        "b": {"type": "boolean"},
        "o": {"type": "object"},
        "a": {"type": "array"},
    }

    assert validate_args(spec, {"s": 1, "n": "1", "b": 0, "o": [], "a": {}}) == [
        '"s" must be a string',
        '"n" must be a number',
        '"b" must be a boolean',
        '"o" must be an object',
        '"a" must be an array',
    ]
    assert validate_args(spec, {"s": "", "n": 1.5, "b": False, "o": {}, "a": []}) == []
    assert validate_args(spec, {"n": 0}) == []


async def test_a_boolean_is_never_a_number() -> None:
    """(extra) ``bool`` is an ``int`` subclass in Python, yet never passes as a number"""
    spec: SchemaSpec = {"n": {"type": "number"}, "o": {"type": "object"}}

    assert validate_args(spec, {"n": True}) == ['"n" must be a number']
    assert validate_args(spec, {"n": False, "o": None}) == ['"n" must be a number', '"o" must be an object']


async def test_checks_enum_membership() -> None:
    """checks enum membership"""
    spec: SchemaSpec = {"color": {"type": "string", "enum": ["red", "green"]}}

    assert validate_args(spec, {"color": "red"}) == []
    assert validate_args(spec, {"color": "blue"}) == ['"color" must be one of ["red","green"]']
    assert validate_args({"c": {"type": "string", "enum": ["é"]}}, {"c": "e"}) == ['"c" must be one of ["é"]']


async def test_checks_enum_uniformly_with_the_converter_enum_on_a_non_string_prop() -> None:
    """checks enum uniformly with the converter (enum on a non-string prop)"""
    number: SchemaSpec = {"n": {"type": "number", "enum": ["1", "2"]}}
    boolean: SchemaSpec = {"b": {"type": "boolean", "enum": ["true"]}}
    empty: SchemaSpec = {"s": {"type": "string", "enum": []}}

    assert validate_args(number, {"n": 1}) == ['"n" must be one of ["1","2"]']
    assert validate_args(boolean, {"b": True}) == ['"b" must be one of ["true"]']
    assert validate_args(empty, {"s": ""}) == ['"s" must be one of []']
    assert validate_args(empty, {}) == []


async def test_enum_membership_is_strict_about_booleans_and_numbers() -> None:
    """(extra) with a (mistyped) non-string enum, True never matches 1 and 1 never matches True"""
    numbers: Any = {"n": {"type": "number", "enum": [1, 2]}}
    booleans: Any = {"b": {"type": "boolean", "enum": [True]}}

    assert validate_args(numbers, {"n": 1}) == []
    assert validate_args(booleans, {"b": True}) == []
    assert validate_args(booleans, {"b": False}) == ['"b" must be one of [true]']
    one: Any = {"b": {"type": "boolean", "enum": [1]}}
    assert validate_args(one, {"b": True}) == ['"b" must be one of [1]']


async def test_enum_is_not_checked_on_object_and_array_props() -> None:
    """(extra) object and array props return their type/recursion result without an enum check"""
    spec: SchemaSpec = {"o": {"type": "object", "enum": []}, "a": {"type": "array", "enum": []}}

    assert validate_args(spec, {"o": {}, "a": []}) == []


async def test_rejects_an_unknown_schema_type_at_runtime_assert_never_guard() -> None:
    """rejects an unknown SchemaType at runtime (assertNever guard)"""
    spec: Any = {"x": {"type": "date"}}

    with pytest.raises(HarnessError, match='unreachable variant in validate_args: "date"') as caught:
        validate_args(spec, {"x": "2026-01-01"})
    assert caught.value.code == "UNREACHABLE"
    assert validate_args(spec, {}) == []


async def test_recurses_into_nested_objects_and_an_object_without_properties_only_type_checks() -> None:
    """recurses into nested objects (and an object without properties only type-checks)"""
    spec: SchemaSpec = {
        "config": {
            "type": "object",
            "required": True,
            "properties": {"host": {"type": "string", "required": True}, "port": {"type": "number"}},
        },
        "bag": {"type": "object"},
    }

    assert validate_args(spec, {"config": {"port": "80"}, "bag": "x"}) == [
        'missing required property "config.host"',
        '"config.port" must be a number',
        '"bag" must be an object',
    ]
    assert validate_args(spec, {"config": {"host": "h"}, "bag": {"anything": [None]}}) == []


async def test_recurses_into_array_items_and_an_array_without_items_only_type_checks() -> None:
    """recurses into array items (and an array without items only type-checks)"""
    spec: SchemaSpec = {"tags": {"type": "array", "items": {"type": "string"}}, "any": {"type": "array"}}

    assert validate_args(spec, {"tags": ["a", 1, "c"]}) == ['"tags[1]" must be a string']
    assert validate_args(spec, {"tags": "a"}) == ['"tags" must be an array']
    assert validate_args(spec, {"tags": [], "any": [1, "x", None, {}]}) == []
    assert validate_args(spec, {"any": (1, 2)}) == ['"any" must be an array']


async def test_validates_arrays_of_objects_element_wise() -> None:
    """validates arrays of objects element-wise"""
    assert validate_args(DEPLOY_SPEC, {"servers": [{"host": "a"}, {"port": 1}]}) == [
        'missing required property "servers[1].host"'
    ]


async def test_nested_paths_compose_through_arrays_of_arrays() -> None:
    """(extra) paths compose through nested arrays and objects"""
    spec: SchemaSpec = {
        "grid": {
            "type": "array",
            "items": {"type": "array", "items": {"type": "object", "properties": {"v": {"type": "number"}}}},
        }
    }

    assert validate_args(spec, {"grid": [[{"v": 1}], [{"v": 2}, {"v": "x"}]]}) == ['"grid[1][1].v" must be a number']


# ------------------------------------------------------------------------ defineTool validation
async def test_returns_an_is_error_result_with_the_violations_when_the_model_sends_bad_args(
    root: Context,
) -> None:
    """returns an isError result with the violations when the model sends bad args"""
    root[TOOLS].register(define_tool("shout", "Repeat text", SHOUT_SPEC, shout))

    result = await root[TOOLS].execute(call("shout", {"upper": "yes"}))

    assert result.is_error is True
    [block] = result.content
    assert type(block) is TextBlock
    assert "invalid arguments" in block.text
    assert 'missing required property "text"' in block.text
    assert block.text == ('Error: invalid arguments: missing required property "text"; "upper" must be a boolean')


async def test_runs_execute_normally_when_args_are_valid(root: Context) -> None:
    """runs execute normally when args are valid"""
    root[TOOLS].register(define_tool("shout", "Repeat text", SHOUT_SPEC, shout))

    result = await root[TOOLS].execute(call("shout", {"text": "hey", "upper": True}))

    assert to_json(result) == {"callId": "c1", "content": [{"type": "text", "text": "HEY"}], "isError": False}


async def test_tool_args_error_carries_a_stable_code_and_the_violation_list() -> None:
    """ToolArgsError carries a stable code and the violation list"""
    error = ToolArgsError(['missing required property "a"', '"b" must be a number'])

    assert isinstance(error, HarnessError)
    assert error.code == "INVALID_ARGS"
    assert error.name == "ToolArgsError"
    assert error.violations == ['missing required property "a"', '"b" must be a number']
    assert str(error) == 'invalid arguments: missing required property "a"; "b" must be a number'


async def test_a_schema_invalid_call_surfaces_the_structured_error_on_the_result(root: Context) -> None:
    """a schema-invalid call surfaces the structured error on the result"""
    root[TOOLS].register(define_tool("shout", "Repeat text", SHOUT_SPEC, shout))

    result = await root[TOOLS].execute(call("shout", "not an object"))

    assert result.error == ToolErrorInfo(name="ToolArgsError", code="INVALID_ARGS")
    assert result.content == reply('Error: invalid arguments: "arguments" must be an object')


async def test_a_tool_throwing_a_harness_error_surfaces_its_name_and_code(root: Context) -> None:
    """a tool throwing a HarnessError surfaces its name and code"""

    async def write(args: Any, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        raise HarnessError("disk full", "ENOSPC")

    root[TOOLS].register(define_tool("write", "Write", {}, write))

    result = await root[TOOLS].execute(call("write"))

    assert result.error == ToolErrorInfo(name="HarnessError", code="ENOSPC")
    assert result.content == reply("Error: disk full")


async def test_a_non_harness_error_throw_has_no_structured_error_only_the_text(root: Context) -> None:
    """a non-HarnessError throw has no structured error (only the text)"""

    async def write(args: Any, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        raise OSError("permission denied")

    root[TOOLS].register(define_tool("write", "Write", {}, write))

    result = await root[TOOLS].execute(call("write"))

    assert result.error is UNSET
    assert "error" not in to_json(result)
    assert result.content == reply("Error: permission denied")


async def test_raw_registered_tools_are_not_validated_by_define_tool_mcp_keeps_its_own(root: Context) -> None:
    """raw-registered tools are NOT validated by defineTool (MCP keeps its own)"""
    seen: list[Any] = []

    async def raw(args: Any, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        seen.append(args)
        return reply("raw ran")

    parameters = schema_spec_to_json_schema(SHOUT_SPEC)
    root[TOOLS].register(ToolDefinition(name="raw", description="raw", parameters=parameters, execute=raw))

    result = await root[TOOLS].execute(call("raw", {"upper": "not a bool"}))

    assert result.is_error is False
    assert seen == [{"upper": "not a bool"}]


async def test_define_tool_rejects_an_unknown_type_up_front() -> None:
    """(extra) a property type outside SchemaType is refused when the tool is defined"""
    nested: Any = {"cfg": {"type": "object", "properties": {"when": {"type": "date"}}}}
    in_items: Any = {"list": {"type": "array", "items": {"type": "tuple"}}}

    with pytest.raises(ValueError, match=r'property "cfg.when" has type \'date\': use one of string, number'):
        define_tool("t", "t", nested, shout)
    with pytest.raises(ValueError, match=r'property "list\[\]" has type \'tuple\''):
        define_tool("t", "t", in_items, shout)
    with pytest.raises(ValueError, match="has type None"):
        define_tool("t", "t", {"x": {}}, shout)  # type: ignore[typeddict-item]


# -------------------------------------------------------------------- defineTool presentation
class ReadArgs(TypedDict):
    path: str


READ_SPEC: SchemaSpec = {"path": {"type": "string", "required": True}}


async def read(args: ReadArgs, execution: ToolExecution) -> tuple[ContentBlock, ...]:
    return reply(f"contents of {args['path']}")


def present_read(args: ReadArgs) -> ToolCallPresentation:
    return ToolCallPresentation(title=f"Read {args['path'].upper()}", kind="read", raw_input=args)


def present_read_result(args: ReadArgs, result: ToolResult) -> ToolResultPresentation:
    size = len(text_of(result.content))
    return ToolResultPresentation(title=f"{args['path']}: {size} chars", terminal=ToolTerminal(output="", exit_code=0))


async def test_threads_present_call_present_result_onto_the_tool_definition_with_typed_args() -> None:
    """threads presentCall/presentResult onto the ToolDefinition with typed args"""
    tool = define_tool("read", "Read", READ_SPEC, read, present_call=present_read, present_result=present_read_result)

    assert tool.present_call is not None
    assert tool.present_result is not None
    assert tool.present_call({"path": "a.txt"}) == ToolCallPresentation(
        title="Read A.TXT", kind="read", raw_input={"path": "a.txt"}
    )
    result = ToolResult(content=reply("12345"), is_error=False)
    assert tool.present_result({"path": "a.txt"}, result) == ToolResultPresentation(
        title="a.txt: 5 chars", terminal=ToolTerminal(output="", exit_code=0)
    )


async def test_a_tool_without_present_call_present_result_leaves_them_undefined_ui_falls_back_generically() -> None:
    """a tool without presentCall/presentResult leaves them undefined (UI falls back generically)"""
    tool = define_tool("read", "Read", READ_SPEC, read)

    assert tool.present_call is None
    assert tool.present_result is None


async def test_present_call_present_result_validate_softly_malformed_args_return_undefined_never_throw_display_runs_on_replay() -> (
    None
):
    """presentCall/presentResult validate softly: malformed args return undefined, never throw (display runs on replay)"""
    tool = define_tool("read", "Read", READ_SPEC, read, present_call=present_read, present_result=present_read_result)
    assert tool.present_call is not None
    assert tool.present_result is not None
    result = ToolResult(content=reply("x"), is_error=True)

    for malformed in ({}, {"path": 3}, "raw string", None, [1]):
        assert tool.present_call(malformed) is None
        assert tool.present_result(malformed, result) is None
