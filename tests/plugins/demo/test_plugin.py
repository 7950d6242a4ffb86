"""The demo model through the real kernel, llm service and agent loop with the real bash tool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import dsh.plugins.demo as demo
import dsh.plugins.tool_bash as tool_bash
from dsh.core.errors import LlmError
from dsh.core.llm import (
    LLM,
    LLM_ADAPTER_CHANGE,
    BlockStartChunk,
    FinishChunk,
    GenerateOptions,
    LlmService,
    Message,
    StopFinish,
    TextBlock,
    TextDeltaChunk,
    TokenUsage,
    ToolCallBlock,
    ToolCallsFinish,
    ToolResultBlock,
    text,
    to_json,
    variant_tag,
)
from dsh.core.session import Session
from dsh.kernel import AbortController, AbortError, ConfigError, Context
from dsh.plugins.bash_local import LocalBashExecutor
from dsh.plugins.demo import LABEL, DemoModel
from dsh.testing.harness import Harness


def of_type(session: Session, kind: str) -> list[dict[str, Any]]:
    """The ``data`` (JSON form) of the events of type ``kind`` in ``session``."""
    return [to_json(event)["data"] for event in session.events if event.type == kind]


async def test_the_module_is_a_namespace_plugin() -> None:
    assert (demo.name, demo.inject) == ("llm-demo", ["llm"])
    assert not hasattr(demo, "default")
    assert demo.Config().models == [demo.DEMO_MODEL]
    with pytest.raises(ConfigError, match="models"):
        await Context().plugin(demo, {"models": []})


async def test_it_answers_a_prompt_with_a_bash_call_through_llm_generate() -> None:
    root = Context()
    await root.plugin(LlmService)
    fiber = await root.plugin(demo, {})
    assert isinstance(fiber.instance, DemoModel)
    result = await root[LLM].generate(GenerateOptions(model="demo", messages=[Message("user", (text("hi"),))]))
    assert result.finish == ToolCallsFinish()
    intro = TextBlock(f"{LABEL} I will run `ls` with the bash tool.")
    call = ToolCallBlock(
        id="demo-call-1",
        name="bash",
        arguments='{"command":"ls","description":"List the files in the working directory"}',
    )
    assert result.message.content == (intro, call)
    read = len('[{"type": "text", "text": "hi"}]')
    written = len(intro.text) + len(call.arguments)
    assert result.usage == TokenUsage(input_tokens=-(-read // 4), output_tokens=-(-written // 4))
    assert fiber.instance.calls == 1
    await root.dispose()


async def test_it_summarizes_a_tool_result_with_a_stop() -> None:
    history = [
        Message("user", (text("echo hi"),)),
        Message("assistant", (ToolCallBlock(id="demo-call-1", name="bash", arguments="{}"),)),
        Message("user", (ToolResultBlock(tool_call_id="demo-call-1", content=(text("hi\n"),)),)),
    ]
    chunks = DemoModel.respond(history)
    assert chunks[-1] == FinishChunk(reason=StopFinish())
    deltas = "".join(chunk.text for chunk in chunks if type(chunk) is TextDeltaChunk)
    assert deltas.startswith(f"{LABEL} The command finished and printed 1 line:")
    assert [variant_tag(chunk) for chunk in chunks[-2:]] == ["usage", "finish"]


async def test_it_stops_with_the_abort_error_once_the_signal_fires() -> None:
    controller = AbortController()
    stream = DemoModel().stream(
        GenerateOptions(model="demo", messages=[Message("user", (text("hi"),))], signal=controller.signal)
    )
    first = await anext(stream)
    assert first == BlockStartChunk(index=0, block_type="text")
    controller.abort("stop")
    with pytest.raises(AbortError):
        await anext(stream)


async def test_it_streams_without_a_signal() -> None:
    chunks = [chunk async for chunk in DemoModel().stream(GenerateOptions(model="demo", messages=[]))]
    assert chunks[-1] == FinishChunk(reason=ToolCallsFinish())


async def test_unloading_the_plugin_unregisters_the_model() -> None:
    root = Context()
    await root.plugin(LlmService)
    fiber = await root.plugin(demo, {"models": ["demo", "demo-2"]})
    assert root[LLM].models() == ["demo", "demo-2"]
    await fiber.dispose()
    assert root[LLM].models() == []
    with pytest.raises(LlmError, match="no adapter"):
        await root[LLM].generate(GenerateOptions(model="demo", messages=[]))
    await root.dispose()


async def test_a_throwing_change_listener_rolls_the_registration_back() -> None:
    root = Context()
    await root.plugin(LlmService)

    def refuse(*_args: object) -> None:
        raise RuntimeError("refused")

    listener = root.on(LLM_ADAPTER_CHANGE, refuse)
    with pytest.raises(RuntimeError, match="refused"):
        await root.plugin(demo, {})
    assert root[LLM].models() == []
    listener()
    await root.plugin(demo, {})
    assert root[LLM].models() == ["demo"]
    await root.dispose()


async def test_a_whole_turn_runs_the_real_bash_tool_and_summarizes_it(tmp_path: Path) -> None:
    (tmp_path / "marker.txt").write_text("x")
    async with Harness() as h:
        await h.ctx.plugin(LocalBashExecutor, {"cwd": str(tmp_path)})
        await h.ctx.plugin(tool_bash)
        await h.ctx.plugin(demo)
        agent = h.agent(model="demo")
        agent.send([text("echo hello demo")])
        await agent.when_idle()
        (call,) = of_type(agent.session, "tool/call")
        assert (call["name"], call["callId"]) == ("bash", "demo-call-1")
        (result,) = of_type(agent.session, "tool/result")
        assert result["content"] == [to_json(text("hello demo\n"))]
        final = of_type(agent.session, "assistant/message")[-1]["content"]
        assert final[0]["text"].startswith(f"{LABEL} `echo 'hello demo'` finished and printed 1 line:")
        assert of_type(agent.session, "turn/end") == [{"turn": 1, "reason": {"kind": "completed"}}]

        agent.send([text("what is here?")])
        await agent.when_idle()
        listing = of_type(agent.session, "tool/result")[-1]
        assert listing["content"] == [to_json(text("marker.txt\n"))]
        assert of_type(agent.session, "tool/call")[-1]["callId"] == "demo-call-2"
