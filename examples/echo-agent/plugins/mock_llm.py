"""mock-llm: a keyless stand-in model, ``mock-echo`` (SPEC §16.2).

It reacts to the newest user text (tagged context such as ``<steering ...>`` markers is
skipped): ``echo <text>`` makes it call the ``echo`` tool with ``<text>``; after a tool
result it says the tool has spoken; anything else is answered with a canned reply. Text
is streamed one character at a time, ``delayMs`` apart (default 2 ms, only for the feel
of a live model).

A module plugin referenced from ``tree.yml`` by its path; it needs the ``llm`` service.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence

from pydantic import BaseModel, ConfigDict, Field

from dsh.core.llm import (
    LLM,
    BlockEndChunk,
    BlockStartChunk,
    FinishChunk,
    GenerateOptions,
    LlmAdapter,
    Message,
    StopFinish,
    StreamChunk,
    TextBlock,
    TextDeltaChunk,
    TokenUsage,
    ToolCallBlock,
    ToolCallDeltaChunk,
    ToolCallsFinish,
    ToolResultBlock,
    UsageChunk,
)
from dsh.kernel import AbortSignal, Context

name = "mock-llm"
inject = [LLM.name]

MODEL = "mock-echo"
CALL_ID = "call-echo"
ECHO_PREFIX = "echo "
TOOL_INTRO = "Let me echo that for you."
AFTER_TOOL = "The echo tool has spoken."


class Config(BaseModel):
    """``delayMs``: milliseconds between streamed characters (0 streams without pausing)."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    delay_ms: float = Field(2, alias="delayMs", ge=0)


def user_text(messages: Sequence[Message]) -> str:
    """The text to react to: newest user message first, its text blocks in order, the first
    text that does not start with ``<``; ``""`` when there is none."""
    for message in reversed(messages):
        if message.role != "user":
            continue
        for block in message.content:
            if type(block) is TextBlock and not block.text.startswith("<"):
                return block.text
    return ""


def ends_with_tool_result(messages: Sequence[Message]) -> bool:
    """True when the last message (any role) holds a ``tool-result`` block."""
    return bool(messages) and any(type(block) is ToolResultBlock for block in messages[-1].content)


class MockEchoAdapter(LlmAdapter):
    """The ``mock-echo`` model; see the module docstring. It observes the request's abort signal."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def stream(self, options: GenerateOptions) -> AsyncIterator[StreamChunk]:
        signal = options.signal
        said = user_text(options.messages)
        if said.startswith(ECHO_PREFIX) and not ends_with_tool_result(options.messages):
            async for chunk in self._text(0, TOOL_INTRO, signal):
                yield chunk
            arguments = json.dumps({"text": said[len(ECHO_PREFIX) :]}, ensure_ascii=False, separators=(",", ":"))
            yield BlockStartChunk(index=1, block_type="tool-call")
            yield ToolCallDeltaChunk(index=1, id=CALL_ID, name="echo", arguments_delta=arguments)
            yield BlockEndChunk(index=1, block=ToolCallBlock(id=CALL_ID, name="echo", arguments=arguments))
            yield UsageChunk(usage=TokenUsage(input_tokens=20, output_tokens=10))
            yield FinishChunk(reason=ToolCallsFinish())
            return
        if ends_with_tool_result(options.messages):
            reply = AFTER_TOOL
        else:
            reply = f'You said: "{said}". Try "echo <something>" to see a tool call.'
        async for chunk in self._text(0, reply, signal):
            yield chunk
        yield UsageChunk(usage=TokenUsage(input_tokens=20, output_tokens=len(reply)))
        yield FinishChunk(reason=StopFinish())

    async def _text(self, index: int, reply: str, signal: AbortSignal | None) -> AsyncIterator[StreamChunk]:
        yield BlockStartChunk(index=index, block_type="text")
        for char in reply:
            if self.delay:
                await asyncio.sleep(self.delay)
            if signal is not None:
                signal.throw_if_aborted()
            yield TextDeltaChunk(index=index, text=char)
        yield BlockEndChunk(index=index, block=TextBlock(text=reply))


def apply(ctx: Context, config: Config) -> MockEchoAdapter:
    """Serve ``mock-echo`` on behalf of this plugin's fiber; return the adapter."""
    adapter = MockEchoAdapter(config.delay_ms / 1000)
    ctx[LLM].register_adapter([MODEL], adapter)
    return adapter
