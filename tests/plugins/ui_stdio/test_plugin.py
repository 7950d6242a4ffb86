"""The ``ui-stdio`` module plugin: real stdin/stdout/exit binding, the loader path, config."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import dsh.plugins.ui_stdio as ui_stdio
from dsh.core.agent import AGENT_QUEUED, Agent
from dsh.core.llm import text_of
from dsh.kernel import ConfigError, Context, FiberState, describe, resolve_plugin
from dsh.plugins.ui_stdio import EXIT_DELAY, StdioChatConfig, chat_config, exit_process, stdio_runtime
from dsh.plugins.ui_stdio import plugin as plugin_module
from dsh.testing.harness import Harness
from dsh.testing.scripted import text_response


class Stdin:
    """A stand-in for ``sys.stdin`` backed by a pipe: the test writes what is "typed"."""

    def __init__(self) -> None:
        self.read_end, self.write_end = os.pipe()

    def fileno(self) -> int:
        return self.read_end

    def type(self, data: bytes) -> None:
        os.write(self.write_end, data)

    def end(self) -> None:
        os.close(self.write_end)
        self.write_end = -1

    def close(self) -> None:
        for end in (self.read_end, self.write_end):
            if end >= 0:
                os.close(end)


@pytest.fixture
def stdin(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stdin]:
    fake = Stdin()
    monkeypatch.setattr(sys, "stdin", fake)
    yield fake
    fake.close()


@pytest.fixture
def exits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    codes: list[int] = []
    monkeypatch.setattr(plugin_module, "exit_process", codes.append)
    return codes


def reader_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name.startswith("dsh read_lines")]


async def test_apply_chats_over_the_real_stdin_and_stdout(
    stdin: Stdin, capsys: pytest.CaptureFixture[str], exits: list[int]
) -> None:
    """Lines typed on stdin reach the agent; output lands on stdout; disposal stops the reader thread."""
    async with Harness([text_response("pong")]) as h:
        agent = h.agent("main")
        queued: asyncio.Queue[str] = asyncio.Queue()

        def on_queued(_agent: Agent, content: Any, _info: Any) -> None:
            queued.put_nowait(text_of(content))

        h.ctx.on(AGENT_QUEUED, on_queued)
        fiber = await h.ctx.plugin(ui_stdio, {"welcome": "hello from stdio"})
        stdin.type(b"ping\n")
        assert await queued.get() == "ping"
        await agent.when_idle()
        assert capsys.readouterr().out == "hello from stdio\n> \n[main turn 1] pong\n> "
        assert len(reader_threads()) == 1
        await fiber.dispose()
        assert reader_threads() == []
        assert exits == []


async def test_apply_schedules_the_exit_on_the_loop_timer_and_disposal_cancels_it(
    stdin: Stdin, capsys: pytest.CaptureFixture[str], exits: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """End of stdin with nothing submitted: exit(0) goes on the loop's timer, ``EXIT_DELAY`` out."""
    loop = asyncio.get_running_loop()
    scheduled: list[tuple[float, asyncio.TimerHandle]] = []
    armed = asyncio.Event()
    real_call_later = loop.call_later

    def call_later(delay: float, callback: Callable[[], object]) -> asyncio.TimerHandle:
        handle = real_call_later(delay, callback)
        scheduled.append((delay, handle))
        armed.set()
        return handle

    async with Harness() as h:
        fiber = await h.ctx.plugin(ui_stdio, {})
        monkeypatch.setattr(loop, "call_later", call_later)
        stdin.end()
        await armed.wait()
        ((delay, handle),) = scheduled
        assert delay == EXIT_DELAY
        await fiber.dispose()
        assert handle.cancelled()
        assert exits == []
        assert capsys.readouterr().out == "ready.\n> "


def test_stdio_runtime_binds_stdin_stdout_and_the_process_exit(
    stdin: Stdin, capsys: pytest.CaptureFixture[str]
) -> None:
    runtime = stdio_runtime()
    assert runtime.output is sys.stdout
    assert runtime.exit is exit_process
    assert runtime.timer is None
    assert hasattr(runtime.input, "__anext__")


def test_exit_process_raises_system_exit_with_the_code() -> None:
    with pytest.raises(SystemExit) as raised:
        exit_process(3)
    assert raised.value.code == 3


def test_the_loader_resolves_ui_stdio_to_this_module_namespace() -> None:
    """The entry point names the module itself (name, inject, Config, apply), never another callable."""
    plugin = resolve_plugin("ui-stdio", ".")
    assert plugin is ui_stdio
    info = describe(plugin)
    assert info.name == "ui-stdio"
    assert info.inject == ("agents",)
    assert info.config_model is StdioChatConfig
    assert info.start is ui_stdio.apply


async def test_an_unknown_config_key_rejects_the_load() -> None:
    async with Harness() as h:
        with pytest.raises(ConfigError, match="welcom"):
            await h.ctx.plugin(ui_stdio, {"welcom": "typo"})


async def test_the_plugin_waits_for_the_agents_service(stdin: Stdin, capsys: pytest.CaptureFixture[str]) -> None:
    """Without ``agents`` the plugin stays pending: no banner, no reader."""
    root = Context()
    fiber = await root.plugin(ui_stdio, {})
    assert fiber.state is FiberState.PENDING
    assert reader_threads() == []
    await root.dispose()
    assert capsys.readouterr().out == ""


def test_chat_config_applies_defaults_and_passes_a_model_through() -> None:
    assert chat_config(None) == StdioChatConfig(welcome="ready.", agent="main")
    assert chat_config({"agent": "x"}) == StdioChatConfig(welcome="ready.", agent="x")
    ready = StdioChatConfig(welcome="w")
    assert chat_config(ready) is ready
