"""SPEC §6.4, describe ``ToolRegistry`` / ``ToolRegistry.get`` and the non-exception-throw regressions."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from dsh.core.errors import HarnessError, ToolNotFoundError
from dsh.core.llm import UNSET, ContentBlock, ToolSchema, text, to_json
from dsh.core.session import ToolErrorInfo
from dsh.core.system_prompt import SYSTEM_PROMPT, SystemPrompt
from dsh.core.tools import (
    TOOLS,
    TOOLS_CHANGE,
    TOOLS_EXECUTE,
    ToolCallPresentation,
    ToolDefinition,
    ToolExecution,
    ToolExecutionResult,
    ToolRegistry,
    ToolResultPresentation,
)
from dsh.kernel import AbortController, Context, Fiber, FiberState, KernelError, PluginSpec
from tests.core.system_prompt.helpers import contributor
from tests.core.tools.helpers import boot, call, failing_tool, text_tool

Next = Callable[[], Awaitable[ToolExecutionResult]]


@pytest.fixture
async def root() -> AsyncIterator[Context]:
    ctx = await boot()
    yield ctx
    await ctx.dispose()


def state_of(fiber: Fiber) -> FiberState:
    return fiber.state


def raising_listener() -> None:
    raise RuntimeError("change listener exploded")


class MessageOnlyError(Exception):
    """An exception whose text lives only in ``.message`` (the reference's ``throw {message}``)."""

    def __init__(self, message: object) -> None:
        super().__init__()
        self.message = message


class OpaqueError(Exception):
    """An exception with no text at all (the reference's ``throw {}``)."""


# --------------------------------------------------------------------------- ToolRegistry
async def test_registers_tools_exposes_schemas_and_feeds_the_system_prompt_assembly(root: Context) -> None:
    """registers tools, exposes schemas, and feeds the system-prompt assembly"""
    tools = root[TOOLS]
    tools.register(text_tool("echo"))

    expected = ToolSchema(name="echo", description="the echo tool", parameters={"type": "object", "properties": {}})
    assert tools.schemas() == [expected]
    assert (await root[SYSTEM_PROMPT].assemble()).tools == [expected]


async def test_the_assembly_shares_the_definitions_immutable_schema(root: Context) -> None:
    """(typed values) the registry announces each definition's one schema, uncopied: it is immutable, so an
    assembly cannot change it, and editing one assembly's list touches neither the registry nor the next
    assembly; strict is announced"""
    parameters = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    definition = ToolDefinition(
        name="read", description="read", parameters=parameters, execute=text_tool("x").execute, strict=True
    )
    root[TOOLS].register(definition)

    first = await root[SYSTEM_PROMPT].assemble()
    [schema] = first.tools
    assert schema == ToolSchema(name="read", description="read", parameters=parameters, strict=True)
    assert schema is definition.schema
    assert schema.parameters is parameters
    with pytest.raises(AttributeError, match="immutable"):
        schema.description = "mutated"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        definition.description = "mutated"  # type: ignore[misc]
    first.tools.clear()

    [again] = (await root[SYSTEM_PROMPT].assemble()).tools
    assert again is schema
    assert definition.description == "read"


async def test_schemas_drops_the_ui_presentation_callbacks_they_must_never_reach_the_model(
    root: Context,
) -> None:
    """schemas() drops the UI presentation callbacks — they must never reach the model"""
    root[TOOLS].register(
        text_tool(
            "shown",
            present_call=lambda args: ToolCallPresentation(title="shown"),
            present_result=lambda args, result: ToolResultPresentation(title="done"),
        )
    )

    [schema] = root[TOOLS].schemas()
    assert sorted(to_json(schema)) == ["description", "name", "parameters"]
    [announced] = (await root[SYSTEM_PROMPT].assemble()).tools
    assert sorted(to_json(announced)) == ["description", "name", "parameters"]


async def test_schemas_preserves_strict_when_set_allowlist_keeps_the_model_facing_fields(
    root: Context,
) -> None:
    """schemas() preserves `strict` when set (allowlist keeps the model-facing fields)"""
    root[TOOLS].register(text_tool("strict_on", strict=True))
    root[TOOLS].register(text_tool("strict_off", strict=False))
    root[TOOLS].register(text_tool("unset"))

    by_name = {schema.name: schema for schema in root[TOOLS].schemas()}
    assert by_name["strict_on"].strict is True
    assert by_name["strict_off"].strict is False
    assert by_name["unset"].strict is UNSET
    assert "strict" not in to_json(by_name["unset"])
    assert list(to_json(by_name["strict_on"])) == ["name", "description", "parameters", "strict"]
    assert to_json(by_name["strict_off"])["strict"] is False


async def test_executes_a_tool_and_returns_its_content(root: Context) -> None:
    """executes a tool and returns its content"""
    root[TOOLS].register(text_tool("echo", reply="hi"))

    result = await root[TOOLS].execute(call("echo", call_id="call-7"))

    assert result == ToolExecutionResult(call_id="call-7", content=(text("hi"),), is_error=False)
    assert to_json(result) == {
        "callId": "call-7",
        "content": [{"type": "text", "text": "hi"}],
        "isError": False,
    }


async def test_the_tool_receives_the_arguments_and_the_execution(root: Context) -> None:
    """(extra) execute(args, exec) gets the parsed arguments and the very execution object"""
    seen: list[tuple[Any, ToolExecution]] = []

    async def execute(args: Any, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        seen.append((args, execution))
        return ()

    root[TOOLS].register(ToolDefinition(name="spy", description="spy", parameters={}, execute=execute))
    agent = object()
    execution = ToolExecution(
        call_id="c9", name="spy", arguments="not json", agent=agent, signal=AbortController().signal
    )

    result = await root[TOOLS].execute(execution)

    assert seen == [("not json", execution)]
    assert seen[0][1].agent is agent
    assert result.content == ()
    assert result.is_error is False


async def test_returns_is_error_results_for_unknown_tools_and_throwing_tools(root: Context) -> None:
    """returns isError results for unknown tools and throwing tools"""
    root[TOOLS].register(failing_tool("boom", RuntimeError("exploded")))

    unknown = await root[TOOLS].execute(call("nope", call_id="u1"))
    assert to_json(unknown) == {
        "callId": "u1",
        "content": [{"type": "text", "text": 'Error: unknown tool "nope"'}],
        "isError": True,
        "error": {"name": "ToolNotFoundError", "code": "UNKNOWN_TOOL"},
    }

    boom = await root[TOOLS].execute(call("boom", call_id="b1"))
    assert to_json(boom) == {
        "callId": "b1",
        "content": [{"type": "text", "text": "Error: exploded"}],
        "isError": True,
    }
    assert boom.error is UNSET


async def test_tool_not_found_error_carries_the_tool_name_and_a_stable_code() -> None:
    """ToolNotFoundError carries the tool name and a stable code"""
    error = ToolNotFoundError("ghost")

    assert isinstance(error, HarnessError)
    assert error.tool_name == "ghost"
    assert error.code == "UNKNOWN_TOOL"
    assert error.name == "ToolNotFoundError"
    assert str(error) == 'unknown tool "ghost"'


async def test_lets_tools_execute_waterfall_listeners_veto_a_call_permission_pattern(root: Context) -> None:
    """lets tools/execute waterfall listeners veto a call (permission pattern)"""
    ran: list[str] = []

    async def execute(args: Any, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        ran.append("ran")
        return ()

    async def deny(execution: ToolExecution, next_: Next) -> ToolExecutionResult:
        if execution.name == "rm":
            return ToolExecutionResult(call_id=execution.call_id, content=(text("denied"),), is_error=True)
        return await next_()

    root[TOOLS].register(ToolDefinition(name="rm", description="remove", parameters={}, execute=execute))
    root.on(TOOLS_EXECUTE, deny)

    result = await root[TOOLS].execute(call("rm", call_id="r1"))

    assert result == ToolExecutionResult(call_id="r1", content=(text("denied"),), is_error=True)
    assert ran == []


async def test_composes_multiple_tools_execute_listeners_sandbox_wrap_pattern(root: Context) -> None:
    """composes multiple tools/execute listeners (sandbox-wrap pattern)"""
    order: list[str] = []

    async def execute(args: Any, execution: ToolExecution) -> list[ContentBlock]:
        order.append("tool")
        return [text("inner")]  # a list is accepted and stored as a tuple

    def wrapper(label: str) -> Callable[[ToolExecution, Next], Awaitable[ToolExecutionResult]]:
        async def wrap(execution: ToolExecution, next_: Next) -> ToolExecutionResult:
            order.append(f"{label}:before")
            result = await next_()
            order.append(f"{label}:after")
            return result

        return wrap

    root[TOOLS].register(ToolDefinition(name="t", description="t", parameters={}, execute=execute))
    root.on(TOOLS_EXECUTE, wrapper("first"))
    root.on(TOOLS_EXECUTE, wrapper("second"))

    result = await root[TOOLS].execute(call("t"))

    assert order == ["first:before", "second:before", "tool", "second:after", "first:after"]
    assert result.content == (text("inner"),)


async def test_a_wrapping_listener_sees_a_failing_tool_as_an_error_result(root: Context) -> None:
    """(extra) next() resolves to the isError result of a failing tool; it does not raise"""
    seen: list[ToolExecutionResult] = []

    async def wrap(execution: ToolExecution, next_: Next) -> ToolExecutionResult:
        result = await next_()
        seen.append(result)
        return result

    root.on(TOOLS_EXECUTE, wrap)
    root[TOOLS].register(failing_tool("boom", RuntimeError("exploded")))

    result = await root[TOOLS].execute(call("boom"))

    assert seen == [result]
    assert result.is_error is True
    assert result.content == (text("Error: exploded"),)


async def test_a_listener_may_rewrite_the_execution_before_calling_next(root: Context) -> None:
    """(extra) the cooperative style: mutate the shared execution, then delegate"""
    seen: list[Any] = []

    async def execute(args: Any, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        seen.append(args)
        return ()

    def sandbox(execution: ToolExecution, next_: Next) -> Awaitable[ToolExecutionResult]:
        execution.arguments = {"cwd": "/sandbox"}
        return next_()

    root[TOOLS].register(ToolDefinition(name="t", description="t", parameters={}, execute=execute))
    root.on(TOOLS_EXECUTE, sandbox)

    await root[TOOLS].execute(call("t", {"cwd": "/"}))

    assert seen == [{"cwd": "/sandbox"}]


async def test_a_listener_may_return_a_result_without_awaiting(root: Context) -> None:
    """(extra) a synchronous listener returning a plain result is accepted"""
    vetoed = ToolExecutionResult(call_id="s1", content=(), is_error=True)
    root.on(TOOLS_EXECUTE, lambda execution, next_: vetoed)

    assert await root[TOOLS].execute(call("anything", call_id="s1")) is vetoed


async def test_returns_an_is_error_result_when_a_tools_execute_listener_throws(root: Context) -> None:
    """returns an isError result when a tools/execute listener throws"""

    def explode(execution: ToolExecution, next_: Next) -> Awaitable[ToolExecutionResult]:
        raise RuntimeError("listener failed")

    root.on(TOOLS_EXECUTE, explode)
    root[TOOLS].register(text_tool("t"))

    result = await root[TOOLS].execute(call("t", call_id="x1"))

    assert to_json(result) == {
        "callId": "x1",
        "content": [{"type": "text", "text": "Error: listener failed"}],
        "isError": True,
    }


async def test_an_async_listener_that_raises_after_awaiting_next_becomes_an_error_result(
    root: Context,
) -> None:
    """(extra) a listener failing after the tool ran still yields an isError result"""

    async def late(execution: ToolExecution, next_: Next) -> ToolExecutionResult:
        await next_()
        raise RuntimeError("post-processing failed")

    root.on(TOOLS_EXECUTE, late)
    root[TOOLS].register(text_tool("t"))

    result = await root[TOOLS].execute(call("t"))

    assert result.is_error is True
    assert result.content == (text("Error: post-processing failed"),)


async def test_preserves_structured_error_info_when_a_tools_execute_listener_throws_harness_error(
    root: Context,
) -> None:
    """preserves structured error info when a tools/execute listener throws HarnessError"""

    async def deny(execution: ToolExecution, next_: Next) -> ToolExecutionResult:
        raise HarnessError("not allowed here", "DENIED")

    root.on(TOOLS_EXECUTE, deny)

    result = await root[TOOLS].execute(call("t", call_id="d1"))

    assert to_json(result) == {
        "callId": "d1",
        "content": [{"type": "text", "text": "Error: not allowed here"}],
        "isError": True,
        "error": {"name": "HarnessError", "code": "DENIED"},
    }


async def test_cancellation_is_never_turned_into_a_result(root: Context) -> None:
    """(extra) asyncio.CancelledError from a tool or a listener propagates untouched"""
    root[TOOLS].register(failing_tool("cancelled", asyncio.CancelledError()))
    with pytest.raises(asyncio.CancelledError):
        await root[TOOLS].execute(call("cancelled"))

    async def cancel(execution: ToolExecution, next_: Next) -> ToolExecutionResult:
        raise asyncio.CancelledError

    root.on(TOOLS_EXECUTE, cancel)
    with pytest.raises(asyncio.CancelledError):
        await root[TOOLS].execute(call("anything"))


async def test_schemas_hands_out_immutable_schemas_in_a_new_list(root: Context) -> None:
    """schemas() snapshots tool schemas instead of exposing registry objects

    With immutable values the snapshot is the list: each call returns a new one, and
    the schemas in it are the definitions' own frozen values, shared.
    """
    parameters = {"type": "object", "properties": {"path": {"type": "string"}}}
    definition = ToolDefinition(name="read", description="read", parameters=parameters, execute=text_tool("x").execute)
    root[TOOLS].register(definition)

    first = root[TOOLS].schemas()
    with pytest.raises(AttributeError, match="immutable"):
        first[0].name = "mutated"  # type: ignore[misc]
    first.clear()

    [schema] = root[TOOLS].schemas()
    assert schema == ToolSchema(name="read", description="read", parameters=parameters)
    assert schema is definition.schema


async def test_rejects_duplicate_names_and_unregisters_on_fiber_dispose_hmr_safety(root: Context) -> None:
    """rejects duplicate names and unregisters on fiber dispose (HMR safety)"""
    fiber = await contributor(root, "tools")
    fiber.ctx[TOOLS].register(text_tool("plugin_tool"))

    with pytest.raises(ValueError, match=r'^tool "plugin_tool" is already registered$'):
        root[TOOLS].register(text_tool("plugin_tool", reply="other"))
    assert (await root[TOOLS].execute(call("plugin_tool"))).content == (text("ok"),)

    await fiber.dispose()

    assert root[TOOLS].get("plugin_tool") is None
    assert root[TOOLS].schemas() == []
    assert (await root[SYSTEM_PROMPT].assemble()).tools == []
    assert fiber.effect_count == 0
    root[TOOLS].register(text_tool("plugin_tool", reply="reborn"))
    assert (await root[TOOLS].execute(call("plugin_tool"))).content == (text("reborn"),)


async def test_a_duplicate_registration_changes_nothing(root: Context) -> None:
    """(extra) the duplicate check happens before any mutation or notification"""
    changes: list[str] = []
    root[TOOLS].register(text_tool("t"))
    root.on(TOOLS_CHANGE, lambda: changes.append("change"))
    fiber = await contributor(root, "tools")
    count = fiber.effect_count

    with pytest.raises(ValueError, match="already registered"):
        fiber.ctx[TOOLS].register(text_tool("t"))

    assert changes == []
    assert fiber.effect_count == count


async def test_returns_a_callable_disposer_from_register_that_unregisters_the_tool(root: Context) -> None:
    """returns a callable disposer from register() that unregisters the tool"""
    changes: list[str] = []
    root.on(TOOLS_CHANGE, lambda: changes.append("change"))
    dispose = root[TOOLS].register(text_tool("t"))
    assert changes == ["change"]

    assert dispose() is None

    assert root[TOOLS].get("t") is None
    assert changes == ["change", "change"]
    dispose()
    assert changes == ["change", "change"]
    assert (await root[TOOLS].execute(call("t"))).error == ToolErrorInfo(name="ToolNotFoundError", code="UNKNOWN_TOOL")


async def test_rolls_back_the_tool_entry_when_a_tools_change_listener_throws_p1_1(root: Context) -> None:
    """rolls back the tool entry when a tools/change listener throws (P1-1)"""
    fiber = await contributor(root, "tools")
    count = fiber.effect_count
    listener = root.on(TOOLS_CHANGE, raising_listener)

    with pytest.raises(RuntimeError, match="change listener exploded"):
        fiber.ctx[TOOLS].register(text_tool("doomed"))

    assert root[TOOLS].get("doomed") is None
    assert root[TOOLS].schemas() == []
    assert fiber.effect_count == count
    listener()
    fiber.ctx[TOOLS].register(text_tool("doomed"))
    assert root[TOOLS].get("doomed") is not None


async def test_registering_through_a_disposed_context_raises(root: Context) -> None:
    """(extra) a registration through a dead plugin's context fails and leaves nothing"""
    fiber = await contributor(root, "tools")
    handle = fiber.ctx[TOOLS]
    await fiber.dispose()

    with pytest.raises(KernelError, match="cannot create effect on inactive context"):
        handle.register(text_tool("late"))
    assert root[TOOLS].get("late") is None


async def test_the_registry_provider_belongs_to_the_registry_fiber() -> None:
    """(extra) disposing the registry's fiber withdraws the service and its prompt provider"""
    ctx = Context()
    await ctx.plugin(SystemPrompt)
    registry_fiber = await ctx.plugin(ToolRegistry)
    ctx[TOOLS].register(text_tool("t"))
    assert [tool.name for tool in (await ctx[SYSTEM_PROMPT].assemble()).tools] == ["t"]

    await registry_fiber.dispose()

    assert ctx.get(TOOLS) is None
    assert (await ctx[SYSTEM_PROMPT].assemble()).tools == []
    await ctx.dispose()


async def test_the_registry_waits_for_the_system_prompt_service() -> None:
    """(extra) ToolRegistry injects system_prompt: it starts only once that service exists"""
    ctx = Context()
    registry_fiber = await ctx.plugin(ToolRegistry)
    assert registry_fiber.state is FiberState.PENDING
    assert ctx.get(TOOLS) is None
    assert ToolRegistry.inject == ["system_prompt"]

    started: asyncio.Future[Context] = asyncio.get_running_loop().create_future()
    await ctx.plugin(PluginSpec(name="waiter", apply=lambda c, _config: started.set_result(c), inject=["tools"]))
    await ctx.plugin(SystemPrompt)
    await started

    assert state_of(registry_fiber) is FiberState.ACTIVE
    service = ctx.get(TOOLS)
    assert isinstance(service, ToolRegistry)
    await ctx.dispose()


# ---------------------------------------------------------- regressions (Codex review round 2)
async def test_reports_messages_from_non_error_throws_throw_message(root: Context) -> None:
    """reports messages from non-Error throws (throw { message })

    Python raises only exceptions: the analogue is an exception whose ``str()`` is
    empty and whose text lives in a string ``.message`` attribute.
    """

    async def deny(execution: ToolExecution, next_: Next) -> ToolExecutionResult:
        raise MessageOnlyError("denied by object")

    root.on(TOOLS_EXECUTE, deny)

    result = await root[TOOLS].execute(call("t"))

    assert result.content == (text("Error: denied by object"),)
    assert result.is_error is True
    assert result.error is UNSET


async def test_reports_messages_from_throws_of_non_objects_throw_string(root: Context) -> None:
    """reports messages from throws of non-objects (throw "string")

    Python analogue: a plain exception carrying just a string.
    """
    root[TOOLS].register(failing_tool("t", Exception("kaboom")))

    result = await root[TOOLS].execute(call("t"))

    assert result.content == (text("Error: kaboom"),)
    assert result.error is UNSET


async def test_reports_messages_from_throws_of_objects_without_message_property(root: Context) -> None:
    """reports messages from throws of objects without message property

    JavaScript prints ``[object Object]``; the Python analogue of an object with no
    text at all is an exception without arguments, reported by its class name.
    """
    root[TOOLS].register(failing_tool("opaque", OpaqueError()))
    root[TOOLS].register(failing_tool("odd", MessageOnlyError(500)))

    opaque = await root[TOOLS].execute(call("opaque"))
    odd = await root[TOOLS].execute(call("odd"))

    assert opaque.content == (text("Error: OpaqueError"),)
    assert odd.content == (text("Error: MessageOnlyError"),)


# ------------------------------------------------------------------------- ToolRegistry.get
async def test_get_returns_the_registered_tool_definition(root: Context) -> None:
    """get() returns the registered tool definition"""
    definition = text_tool("t")
    root[TOOLS].register(definition)

    assert root[TOOLS].get("t") is definition


async def test_get_returns_undefined_for_unknown_tool_names(root: Context) -> None:
    """get() returns undefined for unknown tool names"""
    assert root[TOOLS].get("missing") is None
