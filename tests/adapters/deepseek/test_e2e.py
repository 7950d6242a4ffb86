"""llm-deepseek e2e (real API): key-gated, skipped without ``DEEPSEEK_API_KEY`` (SPEC §10)."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

import dsh.adapters.deepseek as deepseek
from dsh.core.llm import (
    LLM,
    GenerateOptions,
    LlmService,
    Message,
    ReasoningBlock,
    ToolCallBlock,
    ToolCallsFinish,
    ToolResultBlock,
    ToolSchema,
    text,
    text_of,
)
from dsh.kernel import Context
from tests.adapters.deepseek.helpers import collect, kinds

pytestmark = pytest.mark.e2e

Connect = Callable[..., Awaitable[LlmService]]

WEATHER = ToolSchema(
    name="get_weather",
    description="Get the current weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name"}},
        "required": ["city"],
    },
)


@pytest.fixture
async def connect() -> AsyncIterator[Connect]:
    """Load LlmService + llm-deepseek against the real API with the given config; skip without a key."""
    if not os.environ.get("DEEPSEEK_API_KEY"):
        pytest.skip("llm-deepseek e2e needs DEEPSEEK_API_KEY")
    root = Context()
    await root.plugin(LlmService)

    async def load(**config: object) -> LlmService:
        await root.plugin(deepseek, config)
        return root[LLM]

    yield load
    await root.dispose()


def ask(model: str, prompt: str, **fields: object) -> GenerateOptions:
    options = GenerateOptions(model=model, messages=[Message("user", (text(prompt),))], max_tokens=2048)
    for key, value in fields.items():
        setattr(options, key, value)
    return options


def reasoning_of(message: Message) -> list[ReasoningBlock]:
    return [block for block in message.content if type(block) is ReasoningBlock]


def calls_of(message: Message) -> list[ToolCallBlock]:
    return [block for block in message.content if type(block) is ToolCallBlock]


async def test_flash_plus_thinking_disabled_plain_text_generation(connect: Connect) -> None:
    """flash + thinking disabled: plain text generation"""
    llm = await connect(thinking="disabled")
    result = await llm.generate(ask("deepseek-v4-flash", "Reply with exactly the word: pong"))
    assert "pong" in text_of(result.message.content).lower()
    assert reasoning_of(result.message) == []
    assert result.usage is not None
    assert result.usage.input_tokens + (result.usage.cache_read_tokens or 0) > 0
    assert result.usage.output_tokens > 0


async def test_flash_plus_thinking_enabled_effort_high_reasoning_blocks_plus_reasoning_tokens(
    connect: Connect,
) -> None:
    """flash + thinking enabled (effort high): reasoning blocks + reasoning tokens"""
    llm = await connect(thinking="enabled", reasoningEffort="high")
    result = await llm.generate(ask("deepseek-v4-flash", "What is 17 * 23? Answer with the number only."))
    assert reasoning_of(result.message) != []
    assert result.usage is not None
    assert (result.usage.reasoning_tokens or 0) > 0


@pytest.mark.parametrize("effort", ["high", "max"])
async def test_pro_plus_thinking_enabled_effort_tool_call_round_trip_with_reasoning_passback(
    connect: Connect, effort: str
) -> None:
    """pro + thinking enabled (effort %s): tool-call round trip with reasoning passback"""
    llm = await connect(thinking="enabled", reasoningEffort=effort)
    first = await llm.generate(
        ask("deepseek-v4-pro", "What is the weather in Paris right now? Use the tool.", tools=[WEATHER])
    )
    assert first.finish == ToolCallsFinish()
    calls = calls_of(first.message)
    assert calls != []
    call = calls[0]
    assert call.name == "get_weather"
    assert "paris" in json.loads(call.arguments)["city"].lower()
    history: list[Message] = [
        Message("user", (text("What is the weather in Paris right now? Use the tool."),)),
        first.message,
        Message("user", (ToolResultBlock(tool_call_id=call.id, content=(text("sunny, 21C"),)),)),
    ]
    second = await llm.generate(GenerateOptions(model="deepseek-v4-pro", messages=history, tools=[WEATHER]))
    answer = text_of(second.message.content)
    assert "21" in answer or "sunny" in answer.lower()


async def test_pro_plus_thinking_disabled_plain_generation_without_reasoning_blocks(connect: Connect) -> None:
    """pro + thinking disabled: plain generation without reasoning blocks"""
    llm = await connect(thinking="disabled")
    result = await llm.generate(ask("deepseek-v4-pro", "Say hello in one word."))
    assert reasoning_of(result.message) == []
    assert text_of(result.message.content) != ""


async def test_streams_raw_chunks_in_protocol_order(connect: Connect) -> None:
    """streams raw chunks in protocol order"""
    llm = await connect()
    chunks = await collect(llm.stream(ask("deepseek-v4-flash", "Count from 1 to 5.")))
    order = kinds(chunks)
    assert order[0] == "block-start"
    assert order.count("finish") == 1
    assert order[-1] == "finish"
    assert "usage" in order
    assert order.index("usage") < order.index("finish")
