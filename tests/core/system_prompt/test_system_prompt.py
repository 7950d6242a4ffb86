"""SPEC §5 (``packages/system-prompt/tests/system-prompt.spec.ts``, describe ``SystemPrompt``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from dsh.core.llm import ToolSchema
from dsh.core.system_prompt import (
    SYSTEM_PROMPT,
    SYSTEM_PROMPT_ASSEMBLE,
    SYSTEM_PROMPT_CHANGE,
    PromptAssembly,
    PromptSection,
    SystemPrompt,
    render_prompt,
)
from dsh.kernel import Context, KernelError
from tests.core.system_prompt.helpers import contributor

Next = Callable[[], Awaitable[PromptAssembly]]


@pytest.fixture
async def root() -> AsyncIterator[Context]:
    ctx = Context()
    await ctx.plugin(SystemPrompt)
    yield ctx
    await ctx.dispose()


def schema(name: str, parameters: dict[str, Any] | None = None) -> ToolSchema:
    return ToolSchema(name=name, description=f"the {name} tool", parameters=parameters or {"type": "object"})


def names(assembly: PromptAssembly) -> list[str]:
    return [section.name for section in assembly.sections]


def raising_listener() -> None:
    raise RuntimeError("listener exploded")


async def test_assembles_sections_in_order_with_dynamic_text_and_collected_tools(root: Context) -> None:
    """assembles sections in order with dynamic text and collected tools"""
    prompt = root[SYSTEM_PROMPT]
    prompt.section(PromptSection("persona", 0, "You are DeepSeek Code."))
    prompt.section(PromptSection("cwd", 20, lambda: "cwd: /tmp"))
    prompt.section(PromptSection("rules", 10, "Be precise."))
    prompt.tools(lambda: [schema("read")])
    prompt.tools(lambda: [schema("write"), schema("edit")])

    assembly = await prompt.assemble()

    assert names(assembly) == ["persona", "rules", "cwd"]
    assert render_prompt(assembly) == "You are DeepSeek Code.\n\nBe precise.\n\ncwd: /tmp"
    assert assembly.tools == [schema("read"), schema("write"), schema("edit")]


async def test_removes_contributions_when_the_contributing_fiber_is_disposed_hmr_safety(
    root: Context,
) -> None:
    """removes contributions when the contributing fiber is disposed (HMR safety)"""
    root[SYSTEM_PROMPT].section(PromptSection("base", 0, "base"))
    fiber = await contributor(root, "system_prompt")
    fiber.ctx[SYSTEM_PROMPT].section(PromptSection("plugin", 1, "from the plugin"))
    fiber.ctx[SYSTEM_PROMPT].tools(lambda: [schema("plugin_tool")])
    before = await root[SYSTEM_PROMPT].assemble()
    assert names(before) == ["base", "plugin"]
    assert [tool.name for tool in before.tools] == ["plugin_tool"]

    await fiber.dispose()

    after = await root[SYSTEM_PROMPT].assemble()
    assert names(after) == ["base"]
    assert after.tools == []
    with pytest.raises(KernelError, match="cannot create effect on inactive context"):
        fiber.ctx[SYSTEM_PROMPT].section(PromptSection("late", 2, "too late"))


async def test_rolls_back_a_section_when_a_system_prompt_change_listener_throws_p1_1(root: Context) -> None:
    """rolls back a section when a system-prompt/change listener throws (P1-1)"""
    prompt = root[SYSTEM_PROMPT]
    listener = root.on(SYSTEM_PROMPT_CHANGE, raising_listener)
    section = PromptSection("doomed", 0, "never seen")

    with pytest.raises(RuntimeError, match="listener exploded"):
        prompt.section(section)

    assert names(await prompt.assemble()) == []
    listener()
    prompt.section(section)
    assert names(await prompt.assemble()) == ["doomed"]


async def test_rolls_back_a_tool_provider_when_a_system_prompt_change_listener_throws_p1_1(
    root: Context,
) -> None:
    """rolls back a tool provider when a system-prompt/change listener throws (P1-1)"""
    prompt = root[SYSTEM_PROMPT]
    listener = root.on(SYSTEM_PROMPT_CHANGE, raising_listener)

    def provider() -> list[ToolSchema]:
        return [schema("doomed")]

    with pytest.raises(RuntimeError, match="listener exploded"):
        prompt.tools(provider)

    assert (await prompt.assemble()).tools == []
    listener()
    prompt.tools(provider)
    assert (await prompt.assemble()).tools == [schema("doomed")]


async def test_a_rolled_back_contribution_leaves_nothing_on_the_callers_fiber(root: Context) -> None:
    """(unload) a rolled-back section or provider leaves no effect behind on the caller's fiber"""
    fiber = await contributor(root, "system_prompt")
    count = fiber.effect_count
    root.on(SYSTEM_PROMPT_CHANGE, raising_listener)

    with pytest.raises(RuntimeError):
        fiber.ctx[SYSTEM_PROMPT].section(PromptSection("doomed", 0, "x"))
    with pytest.raises(RuntimeError):
        fiber.ctx[SYSTEM_PROMPT].tools(lambda: [schema("doomed")])

    assert fiber.effect_count == count


async def test_composes_multiple_system_prompt_assemble_waterfall_listeners_in_order(root: Context) -> None:
    """composes multiple system-prompt/assemble waterfall listeners in order"""
    seen: list[list[str]] = []

    def first(assembly: PromptAssembly, next_: Next) -> Awaitable[PromptAssembly]:
        assembly.sections.append(PromptSection("first", 99, "added by first"))
        return next_()

    def second(assembly: PromptAssembly, next_: Next) -> Awaitable[PromptAssembly]:
        seen.append(names(assembly))
        assembly.sections.append(PromptSection("second", 100, "added by second"))
        return next_()

    root.on(SYSTEM_PROMPT_ASSEMBLE, first)
    root.on(SYSTEM_PROMPT_ASSEMBLE, second)
    root[SYSTEM_PROMPT].section(PromptSection("base", 0, "base"))

    assembly = await root[SYSTEM_PROMPT].assemble()

    assert seen == [["base", "first"]]
    assert names(assembly) == ["base", "first", "second"]


async def test_lets_a_waterfall_listener_short_circuit_by_not_calling_next(root: Context) -> None:
    """lets a waterfall listener short-circuit by not calling next()"""
    later: list[str] = []
    replacement = PromptAssembly(sections=[PromptSection("only", 0, "replaced")], tools=[])

    async def veto(assembly: PromptAssembly, next_: Next) -> PromptAssembly:
        return replacement

    def never(assembly: PromptAssembly, next_: Next) -> Awaitable[PromptAssembly]:
        later.append("called")
        return next_()

    root.on(SYSTEM_PROMPT_ASSEMBLE, veto)
    root.on(SYSTEM_PROMPT_ASSEMBLE, never)
    root[SYSTEM_PROMPT].section(PromptSection("base", 0, "base"))

    assembly = await root[SYSTEM_PROMPT].assemble()

    assert assembly is replacement
    assert render_prompt(assembly) == "replaced"
    assert later == []


async def test_assembles_snapshots_so_one_step_mutations_do_not_leak_into_future_assemblies(
    root: Context,
) -> None:
    """assembles snapshots so one-step mutations do not leak into future assemblies

    With immutable sections and schemas the snapshot is the assembly's own lists: the
    values in them are shared and cannot be changed in place.
    """
    prompt = root[SYSTEM_PROMPT]
    section = PromptSection("persona", 0, "You are dsh.")
    tool = schema("read", {"type": "object", "properties": {"path": {"type": "string"}}})
    prompt.section(section)
    prompt.tools(lambda: [tool])

    first = await prompt.assemble()
    with pytest.raises(AttributeError):
        first.sections[0].name = "mutated"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        first.sections[0].text = "mutated text"  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        first.tools[0].name = "mutated"  # type: ignore[misc]
    first.sections.append(PromptSection("extra", 1, "extra"))
    first.sections[0] = PromptSection("replaced", 0, "replaced")
    first.tools[0] = schema("replaced")
    first.tools.append(schema("extra"))

    second = await prompt.assemble()
    assert names(second) == ["persona"]
    assert render_prompt(second) == "You are dsh."
    assert second.tools == [schema("read", {"type": "object", "properties": {"path": {"type": "string"}}})]
    assert second.sections[0] is section
    assert second.tools[0] is tool


async def test_sections_are_shared_with_their_text_callable(root: Context) -> None:
    """(extra) an assembly holds the registered (immutable) section itself, callable text included"""

    def dynamic() -> str:
        return "dynamic"

    section = PromptSection("dyn", 0, dynamic)
    root[SYSTEM_PROMPT].section(section)

    assembly = await root[SYSTEM_PROMPT].assemble()

    assert assembly.sections[0] is section
    assert assembly.sections[0].text is dynamic
    assert render_prompt(assembly) == "dynamic"


async def test_a_section_subclass_is_handed_out_as_itself(root: Context) -> None:
    """(extra) a frozen PromptSection subclass keeps its class and extra fields in the assembly"""

    @dataclass(frozen=True)
    class Tagged(PromptSection):
        tag: str = "plain"

    section = Tagged("tagged", 0, "text", tag="special")
    root[SYSTEM_PROMPT].section(section)

    [assembled] = (await root[SYSTEM_PROMPT].assemble()).sections

    assert assembled is section
    assert type(assembled) is Tagged
    assert assembled.tag == "special"


async def test_sorts_stably_so_equal_orders_keep_registration_order(root: Context) -> None:
    """(extra) ties in ``order`` keep registration order; negative and float orders sort too"""
    prompt = root[SYSTEM_PROMPT]
    for name, order in [("b1", 5), ("a", 1.5), ("b2", 5), ("first", -3), ("b3", 5)]:
        prompt.section(PromptSection(name, order, name))

    assert names(await prompt.assemble()) == ["first", "a", "b1", "b2", "b3"]


async def test_filters_out_empty_section_text_from_render_prompt() -> None:
    """filters out empty section text from renderPrompt"""
    assembly = PromptAssembly(
        sections=[
            PromptSection("a", 0, "alpha"),
            PromptSection("empty", 1, ""),
            PromptSection("dynamic-empty", 2, lambda: ""),
            PromptSection("space", 3, " "),
            PromptSection("b", 4, "beta"),
        ]
    )

    assert render_prompt(assembly) == "alpha\n\n \n\nbeta"
    assert render_prompt(PromptAssembly()) == ""


async def test_evaluates_dynamic_function_text_sections_at_each_render_prompt_call() -> None:
    """evaluates dynamic function-text sections at each renderPrompt call"""
    calls = 0

    def counter() -> str:
        nonlocal calls
        calls += 1
        return f"call {calls}"

    assembly = PromptAssembly(sections=[PromptSection("counter", 0, counter)])

    assert render_prompt(assembly) == "call 1"
    assert render_prompt(assembly) == "call 2"


async def test_emits_system_prompt_change_when_a_tool_provider_is_registered_and_disposed(
    root: Context,
) -> None:
    """emits system-prompt/change when a tool provider is registered and disposed"""
    changes = 0

    def on_change() -> None:
        nonlocal changes
        changes += 1

    root.on(SYSTEM_PROMPT_CHANGE, on_change)
    dispose = root[SYSTEM_PROMPT].tools(list)
    assert changes == 1
    dispose()
    assert changes == 2
    dispose()
    assert changes == 2


async def test_emits_system_prompt_change_when_a_section_is_registered_and_disposed(root: Context) -> None:
    """(extra) the same change notifications for sections"""
    changes: list[str] = []
    root.on(SYSTEM_PROMPT_CHANGE, lambda: changes.append("change"))

    dispose = root[SYSTEM_PROMPT].section(PromptSection("s", 0, "s"))
    dispose()

    assert changes == ["change", "change"]


async def test_cleans_up_tool_providers_on_fiber_dispose(root: Context) -> None:
    """cleans up tool providers on fiber dispose"""
    fiber = await contributor(root, "system_prompt")
    calls: list[str] = []

    def provider() -> list[ToolSchema]:
        calls.append("called")
        return [schema("plugin_tool")]

    before = fiber.effect_count
    fiber.ctx[SYSTEM_PROMPT].tools(provider)
    assert fiber.effect_count == before + 1
    assert [tool.name for tool in (await root[SYSTEM_PROMPT].assemble()).tools] == ["plugin_tool"]

    await fiber.dispose()

    assert (await root[SYSTEM_PROMPT].assemble()).tools == []
    assert calls == ["called"]
    assert fiber.effect_count == 0


async def test_removes_section_when_returned_disposer_is_called_directly(root: Context) -> None:
    """removes section when returned disposer is called directly"""
    prompt = root[SYSTEM_PROMPT]
    keep = PromptSection("keep", 0, "keep")
    prompt.section(keep)
    dispose = prompt.section(PromptSection("drop", 1, "drop"))

    assert dispose() is None

    assert names(await prompt.assemble()) == ["keep"]


async def test_removes_tool_provider_when_returned_disposer_is_called_directly(root: Context) -> None:
    """removes tool provider when returned disposer is called directly"""
    prompt = root[SYSTEM_PROMPT]
    prompt.tools(lambda: [schema("keep")])
    dispose = prompt.tools(lambda: [schema("drop")])

    dispose()

    assert (await prompt.assemble()).tools == [schema("keep")]


async def test_removal_is_by_identity_even_for_equal_sections(root: Context) -> None:
    """(extra) two equal section objects are two contributions; disposing one keeps the other"""
    prompt = root[SYSTEM_PROMPT]
    first = PromptSection("same", 0, "same")
    second = PromptSection("same", 0, "same")
    assert first == second
    prompt.section(first)
    dispose_second = prompt.section(second)

    dispose_second()

    assembly = await prompt.assemble()
    assert names(assembly) == ["same"]
    assert render_prompt(assembly) == "same"


async def test_the_service_goes_away_with_its_fiber() -> None:
    """(extra) disposing the SystemPrompt fiber withdraws the service"""
    ctx = Context()
    fiber = await ctx.plugin(SystemPrompt)
    service = ctx.get(SYSTEM_PROMPT)
    assert isinstance(service, SystemPrompt)

    await fiber.dispose()

    gone = ctx.get(SYSTEM_PROMPT)
    assert gone is None
    await ctx.dispose()
