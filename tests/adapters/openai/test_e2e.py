"""llm-openai e2e (real API): key-gated, skipped without ``DEEPSEEK_API_KEY`` (SPEC §11).

Runs against ``$DEEPSEEK_BASE_URL`` (else the public DeepSeek API) through the real
kernel and llm service.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

import dsh.adapters.deepseek as deepseek
import dsh.adapters.openai as llm_openai
from dsh.core.llm import (
    LLM,
    BlockAssembler,
    GenerateOptions,
    GenerateResult,
    LlmService,
    Message,
    ReasoningBlock,
    StopFinish,
    StreamChunk,
    ToolCallBlock,
    ToolCallsFinish,
    ToolResultBlock,
    ToolSchema,
    text,
    text_of,
    variant_tag,
)
from dsh.kernel import Context

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
    """Load LlmService + llm-openai with the given config against the real API; skip without a key."""
    if not os.environ.get("DEEPSEEK_API_KEY"):
        pytest.skip("llm-openai e2e needs DEEPSEEK_API_KEY")
    root = Context()
    await root.plugin(LlmService)

    async def load(**config: object) -> LlmService:
        await root.plugin(llm_openai, config)
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


@pytest.mark.parametrize("model", ["deepseek-v4-flash", "deepseek-v4-pro"])
async def test_model_plus_reasoning_off_plain_text_generation(connect: Connect, model: str) -> None:
    """%s + reasoning off: plain text generation"""
    llm = await connect(reasoning="off")
    result = await llm.generate(ask(model, "Reply with exactly the word: pong"))
    assert result.finish == StopFinish()
    assert "pong" in text_of(result.message.content).lower()
    assert reasoning_of(result.message) == []
    assert result.usage is not None
    assert result.usage.input_tokens + (result.usage.cache_read_tokens or 0) > 0
    assert result.usage.output_tokens > 0


@pytest.mark.parametrize("model", ["deepseek-v4-flash", "deepseek-v4-pro"])
async def test_model_plus_reasoning_high_reasoning_blocks_present(connect: Connect, model: str) -> None:
    """%s + reasoning high: reasoning blocks present"""
    llm = await connect(reasoning="high")
    result = await llm.generate(ask(model, "What is 17 * 23? Answer with the number only."))
    assert reasoning_of(result.message) != []
    assert "391" in text_of(result.message.content)


async def test_pro_plus_reasoning_xhigh_wire_max_tool_call_round_trip(connect: Connect) -> None:
    """pro + reasoning xhigh (wire max): tool-call round trip"""
    llm = await connect(reasoning="xhigh")
    prompt = "What is the weather in Paris right now? Use the tool."
    first = await llm.generate(ask("deepseek-v4-pro", prompt, tools=[WEATHER]))
    assert first.finish == ToolCallsFinish()
    calls = calls_of(first.message)
    assert calls != []
    call = calls[0]
    assert call.name == "get_weather"
    assert "paris" in json.loads(call.arguments)["city"].lower()
    history: list[Message] = [
        Message("user", (text(prompt),)),
        first.message,  # its reasoning is passed back with the tool call
        Message("user", (ToolResultBlock(tool_call_id=call.id, content=(text("sunny, 21C"),)),)),
    ]
    second = await llm.generate(GenerateOptions(model="deepseek-v4-pro", messages=history, tools=[WEATHER]))
    assert second.finish == StopFinish()
    reply = text_of(second.message.content)
    assert "21" in reply or "sunny" in reply.lower()


async def test_produces_the_same_block_structure_as_llm_deepseek_for_the_same_prompt(connect: Connect) -> None:
    """produces the same block structure as llm-deepseek for the same prompt"""
    key = os.environ["DEEPSEEK_API_KEY"]
    base_url = os.environ.get("DEEPSEEK_BASE_URL", llm_openai.PUBLIC_BASE_URL)
    options = ask("deepseek-v4-flash", "Reply with exactly the word: pong", temperature=0.0)
    async with (
        llm_openai.OpenAIAdapter(key, base_url, reasoning="off") as twin,
        deepseek.DeepSeekAdapter(key, base_url, thinking="disabled") as reference,
    ):
        ours = await assemble(twin.stream(options))
        theirs = await assemble(reference.stream(options))
    assert [variant_tag(block) for block in ours.message.content] == [
        variant_tag(block) for block in theirs.message.content
    ]
    assert ours.finish == StopFinish()
    assert theirs.finish == ours.finish
    assert ours.usage is not None
    assert theirs.usage is not None


async def assemble(stream: AsyncIterator[StreamChunk]) -> GenerateResult:
    assembler = BlockAssembler()
    async for chunk in stream:
        assembler.push(chunk)
    return assembler.result()
