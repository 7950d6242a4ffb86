"""Pythonic tool authoring: ``tool_from_function`` and ``define_model_tool``."""

# No ``from __future__ import annotations`` here: some tool functions below are
# defined inside tests, and their annotations must resolve without module globals.
import enum
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from dsh.core.errors import ToolArgsError
from dsh.core.llm import UNSET, ContentBlock, ImageBlock, TextBlock, text, to_json
from dsh.core.session import ToolErrorInfo
from dsh.core.tools import (
    TOOLS,
    ToolExecution,
    as_content,
    define_model_tool,
    define_tool,
    model_parameters,
    parse_model_args,
    tool_from_function,
)
from dsh.kernel import AbortController, Context
from tests.core.tools.helpers import boot, call


@pytest.fixture
async def root() -> AsyncIterator[Context]:
    ctx = await boot()
    yield ctx
    await ctx.dispose()


def text_of(result: Sequence[ContentBlock]) -> str:
    [block] = result
    assert type(block) is TextBlock
    return block.text


async def read_file(path: str, limit: int = 100) -> str:
    """Read a text file."""
    return f"{path}:{limit}"


class Server(BaseModel):
    host: str
    port: int = 22


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class DeployArgs(BaseModel):
    """Where to deploy."""

    servers: list[Server]
    note: str | None = None


# --------------------------------------------------------------------- tool_from_function
async def test_tool_from_function_builds_the_schema_from_the_signature() -> None:
    """(authoring) required = parameters without defaults; defaults and types come from the signature"""
    tool = tool_from_function(read_file)

    assert tool.name == "read_file"
    assert tool.description == "Read a text file."
    assert tool.strict is UNSET
    assert tool.parameters == {
        "type": "object",
        "properties": {"path": {"type": "string"}, "limit": {"default": 100, "type": "integer"}},
        "required": ["path"],
    }


async def test_tool_from_function_runs_with_validated_arguments_and_defaults(root: Context) -> None:
    """(authoring) a str return becomes one text block; omitted optionals take their defaults"""
    root[TOOLS].register(tool_from_function(read_file))

    assert to_json(await root[TOOLS].execute(call("read_file", {"path": "a.txt"}))) == {
        "callId": "c1",
        "content": [{"type": "text", "text": "a.txt:100"}],
        "isError": False,
    }
    assert text_of((await root[TOOLS].execute(call("read_file", {"path": "b", "limit": 5, "x": 1}))).content) == "b:5"


async def test_tool_from_function_reports_readable_violations(root: Context) -> None:
    """(authoring) a ValidationError becomes ToolArgsError with validate_args-style sentences"""
    root[TOOLS].register(tool_from_function(read_file))

    result = await root[TOOLS].execute(call("read_file", {"limit": True}))

    assert result.error == ToolErrorInfo(name="ToolArgsError", code="INVALID_ARGS")
    assert text_of(result.content) == (
        'Error: invalid arguments: missing required property "path"; "limit" must be an integer'
    )
    not_object = await root[TOOLS].execute(call("read_file", "raw text"))
    assert text_of(not_object.content) == 'Error: invalid arguments: "arguments" must be an object'


async def test_tool_from_function_overrides_name_description_and_strict() -> None:
    """(authoring) name=, description= and strict= override; strict adds additionalProperties: false"""
    tool = tool_from_function(read_file, name="read", description="Read it.", strict=True)

    assert (tool.name, tool.description, tool.strict) == ("read", "Read it.", True)
    assert tool.parameters["additionalProperties"] is False
    assert list(tool.parameters) == ["type", "properties", "required", "additionalProperties"]
    assert tool_from_function(read_file, strict=False).strict is False
    assert "additionalProperties" not in tool_from_function(read_file, strict=False).parameters


async def test_tool_from_function_passes_the_execution_to_a_parameter_annotated_tool_execution() -> None:
    """(authoring) a ToolExecution parameter receives the call and is hidden from the model"""
    seen: list[ToolExecution] = []

    async def stop(reason: str, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        """Stop the call."""
        seen.append(execution)
        assert execution.signal is not None
        return (text(reason), text(str(execution.signal.aborted)))

    tool = tool_from_function(stop)
    execution = ToolExecution(call_id="s", name="stop", arguments={"reason": "r"}, signal=AbortController().signal)

    assert list(tool.parameters["properties"]) == ["reason"]
    assert await tool.execute({"reason": "r"}, execution) == (text("r"), text("False"))
    assert seen == [execution]


async def test_tool_from_function_supports_rich_types_and_awkward_parameter_names() -> None:
    """(authoring) Path/Enum/Literal/nested models accept their JSON spelling; names like ``json`` work"""

    async def deploy(
        json: Annotated[Path, Field(description="the manifest")],
        servers: list[Server],
        color: Color = Color.RED,
        mode: Literal["fast", "slow"] = "fast",
        *,
        schema: float = 1.0,
    ) -> str:
        """Deploy."""
        return f"{json.name}|{[s.host for s in servers]}|{color.value}|{mode}|{schema}"

    tool = tool_from_function(deploy)

    assert tool.parameters["properties"]["json"] == {
        "description": "the manifest",
        "format": "path",
        "type": "string",
    }
    assert tool.parameters["properties"]["servers"] == {
        "items": {
            "properties": {"host": {"type": "string"}, "port": {"default": 22, "type": "integer"}},
            "required": ["host"],
            "type": "object",
        },
        "type": "array",
    }
    assert tool.parameters["properties"]["color"] == {
        "enum": ["red", "green"],
        "type": "string",
        "default": "red",
    }
    assert tool.parameters["required"] == ["json", "servers"]
    args = {"json": "dir/m.yaml", "servers": [{"host": "a"}], "color": "green", "schema": 2}
    assert text_of(await tool.execute(args, call("deploy"))) == "m.yaml|['a']|green|fast|2.0"

    with pytest.raises(ToolArgsError) as caught:
        await tool.execute({"json": 1, "servers": [{"host": "a"}, {}], "mode": "warp", "color": "blue"}, call("d"))
    assert caught.value.violations == [
        '"json" must be a string',
        'missing required property "servers[1].host"',
        "\"color\" must be 'red' or 'green'",
        "\"mode\" must be 'fast' or 'slow'",
    ]


async def test_tool_from_function_refuses_what_it_cannot_describe() -> None:
    """(authoring) non-async, *args, positional-only, unannotated, undocumented functions are refused"""

    def sync(path: str) -> str:
        """Sync."""
        return path

    async def star(*paths: str) -> str:
        """Star."""
        return ""

    async def positional(path: str, /) -> str:
        """Positional."""
        return path

    async def untyped(path) -> str:  # type: ignore[no-untyped-def]
        """Untyped."""
        return str(path)

    async def undocumented(path: str) -> str:
        return path

    with pytest.raises(TypeError, match="must be defined with async def"):
        tool_from_function(sync)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r'parameter "paths" .* is variadic positional: use named parameters'):
        tool_from_function(star)
    with pytest.raises(TypeError, match=r'parameter "path" .* is positional-only'):
        tool_from_function(positional)
    with pytest.raises(TypeError, match=r'parameter "path" of tool function .*untyped needs a type annotation'):
        tool_from_function(untyped)
    with pytest.raises(ValueError, match=r'tool "undocumented" has no description: give .* a docstring'):
        tool_from_function(undocumented)
    assert tool_from_function(undocumented, description="Documented.").description == "Documented."


async def test_a_body_returning_neither_text_nor_blocks_is_an_error_result(root: Context) -> None:
    """(authoring) a tuple passes through, a list becomes a tuple; any other return is an error result"""
    image = ImageBlock(url="data:x")

    async def blocks() -> tuple[ContentBlock, ...]:
        """Blocks."""
        return (image,)

    async def listed() -> list[ContentBlock]:
        """Listed blocks."""
        return [image]

    async def number() -> int:
        """Number."""
        return 42

    root[TOOLS].register(tool_from_function(blocks))
    root[TOOLS].register(tool_from_function(listed))
    root[TOOLS].register(tool_from_function(number))  # type: ignore[arg-type]

    assert (await root[TOOLS].execute(call("blocks"))).content == (image,)
    assert (await root[TOOLS].execute(call("listed"))).content == (image,)
    failed = await root[TOOLS].execute(call("number"))
    assert failed.is_error is True
    assert text_of(failed.content) == (
        'Error: tool "number" returned int: return a str or a tuple (or list) of content blocks'
    )
    assert as_content("t", "x") == (text("x"),)


# ---------------------------------------------------------------------- define_model_tool
async def test_define_model_tool_builds_the_schema_from_the_model() -> None:
    """(authoring) a pydantic model gives the schema: nested models inlined, titles dropped"""

    async def execute(args: DeployArgs, execution: ToolExecution) -> str:
        return ",".join(server.host for server in args.servers)

    tool = define_model_tool("deploy", "Deploy", DeployArgs, execute)

    assert tool.strict is UNSET
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "servers": {
                "items": {
                    "properties": {"host": {"type": "string"}, "port": {"default": 22, "type": "integer"}},
                    "required": ["host"],
                    "type": "object",
                },
                "type": "array",
            },
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        },
        "required": ["servers"],
    }
    assert text_of(await tool.execute({"servers": [{"host": "a"}, {"host": "b", "port": 1}]}, call("d"))) == "a,b"


async def test_define_model_tool_validates_and_reports_violations(root: Context) -> None:
    """(authoring) invalid arguments never reach the body; violations name their paths"""
    reached: list[DeployArgs] = []

    async def execute(args: DeployArgs, execution: ToolExecution) -> str:
        reached.append(args)
        return "deployed"

    root[TOOLS].register(define_model_tool("deploy", "Deploy", DeployArgs, execute))

    result = await root[TOOLS].execute(call("deploy", {"servers": [{"host": 1, "port": "22"}], "note": 5}))

    assert reached == []
    assert result.error == ToolErrorInfo(name="ToolArgsError", code="INVALID_ARGS")
    assert text_of(result.content) == (
        'Error: invalid arguments: "servers[0].host" must be a string; '
        '"servers[0].port" must be an integer; "note" must be a string'
    )
    ok = await root[TOOLS].execute(call("deploy", {"servers": []}))
    assert text_of(ok.content) == "deployed"
    assert reached == [DeployArgs(servers=[])]


async def test_define_model_tool_strict_marks_every_object_closed() -> None:
    """(authoring) strict=True is announced and closes every object of the schema"""

    class Open(BaseModel):
        model_config = ConfigDict(extra="allow")
        tags: dict[str, int] = {}

    class Args(BaseModel):
        servers: list[Server]
        extra: Open

    async def execute(args: Args, execution: ToolExecution) -> str:
        return "ok"

    tool = define_model_tool("t", "t", Args, execute, strict=True)

    assert tool.strict is True
    assert tool.parameters["additionalProperties"] is False
    assert tool.parameters["properties"]["servers"]["items"]["additionalProperties"] is False
    assert tool.parameters["properties"]["extra"]["additionalProperties"] is True
    assert tool.parameters["properties"]["extra"]["properties"]["tags"] == {
        "additionalProperties": {"type": "integer"},
        "default": {},
        "type": "object",
    }


async def test_model_parameters_keep_property_names_and_values_that_look_like_schema_keys() -> None:
    """(authoring) only schema nodes lose ``title``: a property named title and defaults survive"""

    class Args(BaseModel):
        title: str = Field(default="t", description="a property called title")
        meta: dict[str, str] = Field(default={"title": "kept"})
        choice: int | str = 0

    assert model_parameters(Args) == {
        "type": "object",
        "properties": {
            "title": {"default": "t", "description": "a property called title", "type": "string"},
            "meta": {
                "additionalProperties": {"type": "string"},
                "default": {"title": "kept"},
                "type": "object",
            },
            "choice": {"anyOf": [{"type": "integer"}, {"type": "string"}], "default": 0},
        },
    }


async def test_model_parameters_refuse_recursive_models() -> None:
    """(authoring) a recursive model cannot be inlined and is refused with the fix"""

    class Node(BaseModel):
        name: str
        children: list["Node"] = []

    with pytest.raises(ValueError, match='recursive model "Node": flatten it'):
        model_parameters(Node)


async def test_parse_model_args_checks_json_strictly() -> None:
    """(authoring) strict JSON validation: no coercion, union members are not part of paths"""

    class Args(BaseModel):
        n: float
        flag: bool = False
        pick: Server | None = None
        items: list[int] | str = []
        table: dict[str, int] = {}
        pair: tuple[int, int] = (0, 0)

    assert parse_model_args(Args, {"n": 1}).n == 1.0
    with pytest.raises(ToolArgsError) as caught:
        parse_model_args(Args, {"n": "1", "flag": 1, "pick": {}, "items": [1, "x"], "table": {"a": "b"}, "pair": "ab"})
    assert caught.value.violations == [
        '"n" must be a number',
        '"flag" must be a boolean',
        'missing required property "pick.host"',
        '"items[1]" must be an integer',
        '"items" must be a string',
        '"table.a" must be an integer',
        '"pair" must be an array',
    ]
    with pytest.raises(ToolArgsError) as not_a_dict:
        parse_model_args(Args, {"n": 1, "table": []})
    assert not_a_dict.value.violations == ['"table" must be an object']
    with pytest.raises(ToolArgsError) as not_json:
        parse_model_args(Args, {"n": object()})
    assert not_json.value.violations == ['"arguments" must be JSON']
    with pytest.raises(ToolArgsError) as nan:
        parse_model_args(Args, {"n": float("nan")})
    assert nan.value.violations == ['"arguments" must be JSON']


async def test_a_model_forbidding_extras_reports_unexpected_properties() -> None:
    """(authoring) with ``extra="forbid"`` an unknown key is a violation of its own"""

    class Closed(BaseModel):
        model_config = ConfigDict(extra="forbid")
        path: str

    async def execute(args: Closed, execution: ToolExecution) -> str:
        return args.path

    tool = define_model_tool("closed", "Closed", Closed, execute)

    assert tool.parameters["additionalProperties"] is False
    with pytest.raises(ToolArgsError) as caught:
        await tool.execute({"path": "p", "mode": "x"}, call("closed"))
    assert caught.value.violations == ['unexpected property "mode"']


async def test_parse_model_args_falls_back_to_pydantic_wording() -> None:
    """(authoring) constraints without a dedicated sentence keep pydantic's message"""

    class Args(BaseModel):
        count: Annotated[int, Field(gt=0)]
        items: list[Any] = Field(default=[], max_length=1)

    with pytest.raises(ToolArgsError) as caught:
        parse_model_args(Args, {"count": 0, "items": [1, 2]})
    assert caught.value.violations == [
        '"count": Input should be greater than 0',
        '"items": List should have at most 1 item after validation, not 2',
    ]


async def test_every_authoring_helper_passes_concurrency_safe_and_defaults_to_false() -> None:
    """``concurrency_safe`` is off unless the author promises it; it never reaches the model."""

    class Args(BaseModel):
        path: str

    async def read(args: Args, _execution: ToolExecution) -> str:
        return args.path

    assert tool_from_function(read_file).concurrency_safe is False
    assert tool_from_function(read_file, concurrency_safe=True).concurrency_safe is True
    assert define_model_tool("r", "R", Args, read).concurrency_safe is False
    safe = define_model_tool("r", "R", Args, read, concurrency_safe=True)
    assert safe.concurrency_safe is True
    assert "concurrency" not in str(to_json(safe.schema))
    assert define_tool("d", "D", {}, lambda _args, _execution: _nothing()).concurrency_safe is False
    assert define_tool("d", "D", {}, lambda _args, _execution: _nothing(), concurrency_safe=True).concurrency_safe


async def _nothing() -> tuple[Any, ...]:
    return ()
