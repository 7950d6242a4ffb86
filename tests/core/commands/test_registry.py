"""The ``commands`` service: registration as effects, validation, listing, matching, change events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from dsh.core.commands import COMMANDS, COMMANDS_CHANGE, Command, CommandCall, CommandRegistry, parse_command_line
from dsh.kernel import Context, PluginSpec


async def reply(agent: Any, args: str) -> str | None:
    return f"{agent}:{args}"


def command(name: str, description: str = "does a thing") -> Command:
    return Command(name=name, description=description, handler=reply)


@pytest.fixture
async def root() -> AsyncIterator[Context]:
    ctx = Context()
    await ctx.plugin(CommandRegistry)
    yield ctx
    await ctx.dispose()


async def test_registered_commands_are_listed_by_name_and_go_with_their_plugin(root: Context) -> None:
    changes: list[tuple[str, ...]] = []
    root.on(COMMANDS_CHANGE, lambda: changes.append(tuple(c.name for c in root[COMMANDS].list())))
    zeta = root[COMMANDS].register(command("zeta"))

    def apply(ctx: Context, _raw: object) -> None:
        ctx[COMMANDS].register(command("alpha"))

    fiber = await root.plugin(PluginSpec(name="alpha-plugin", inject=["commands"], apply=apply))
    registry = root[COMMANDS]
    assert [c.name for c in registry.list()] == ["alpha", "zeta"]
    assert registry.get("alpha") is not None
    assert registry.get("nope") is None
    await fiber.dispose()
    assert [c.name for c in registry.list()] == ["zeta"]
    zeta()
    assert registry.list() == ()
    assert changes == [("zeta",), ("alpha", "zeta"), ("zeta",), ()]


async def test_bad_names_empty_descriptions_and_duplicates_are_refused(root: Context) -> None:
    registry = root[COMMANDS]
    for bad in ("", "Help", "/help", "9lives", "two words"):
        with pytest.raises(ValueError, match="is invalid: use lowercase letters"):
            registry.register(command(bad))
    with pytest.raises(ValueError, match='command "/x" needs a description'):
        registry.register(command("x", "  "))
    registry.register(command("x"))
    with pytest.raises(ValueError, match='command "/x" is already registered'):
        registry.register(command("x"))
    assert [c.name for c in registry.list()] == ["x"]


async def test_a_raising_change_listener_rolls_the_registration_back(root: Context) -> None:
    def refuse() -> None:
        raise RuntimeError("listener broke")

    stop = root.on(COMMANDS_CHANGE, refuse)
    with pytest.raises(RuntimeError, match="listener broke"):
        root[COMMANDS].register(command("x"))
    stop()
    assert root[COMMANDS].list() == ()


async def test_match_finds_the_registered_command_a_line_invokes(root: Context) -> None:
    registry = root[COMMANDS]
    registry.register(command("compact"))
    call = registry.match("/compact  keep the tests \n")
    assert call == CommandCall(registry.get("compact"), "keep the tests")  # type: ignore[arg-type]
    assert await call.command.handler("agent", call.args) == "agent:keep the tests"
    assert registry.match("/compact") == CommandCall(registry.get("compact"), "")  # type: ignore[arg-type]
    assert registry.match("/plan it") is None  # not registered
    assert registry.match("compact") is None
    assert registry.match("/compacting") is None


def test_parse_command_line() -> None:
    assert parse_command_line("/x") == ("x", "")
    assert parse_command_line("/x-y_1 a  b") == ("x-y_1", "a  b")
    assert parse_command_line("/x\nsecond line") == ("x", "second line")
    for line in ("x", " /x", "/", "/X", "/a/b", "/tmp/file is big", "//x"):
        assert parse_command_line(line) is None
