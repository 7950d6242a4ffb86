"""A session that grows: a model that calls a probe tool with big outputs and measures its requests.

The model (:class:`GrowingModel`, played through :class:`~dsh.testing.scripted.ScriptedModel`
entries) answers a summary request (the last message is the summary instruction) with
``summary(request)`` (a text, or the chunks to stream; it may raise), and any other request with a call of ``probe`` until ``steps``
calls were made, then with text. Its usage is the request's own chars/4 size, as a
provider would measure it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dsh.core.llm import (
    BlockEndChunk,
    BlockStartChunk,
    FinishChunk,
    GenerateOptions,
    StopFinish,
    StreamChunk,
    TextBlock,
    TextDeltaChunk,
    TokenUsage,
    ToolCallBlock,
    ToolCallDeltaChunk,
    ToolCallsFinish,
    UsageChunk,
    text_of,
)
from dsh.core.tools import ToolDefinition, ToolExecution
from dsh.plugins.compaction import SUMMARY_INSTRUCTION, estimate_request
from dsh.testing.harness import Harness

BIG = 2400
"""Characters of each probe output."""


def is_summary_request(options: GenerateOptions) -> bool:
    last = options.messages[-1] if options.messages else None
    return last is not None and last.role == "user" and text_of(last.content).startswith(SUMMARY_INSTRUCTION)


def usage_of(options: GenerateOptions, output: int) -> UsageChunk:
    return UsageChunk(
        usage=TokenUsage(
            input_tokens=estimate_request(options.system, options.tools, options.messages), output_tokens=output
        )
    )


def text_chunks(options: GenerateOptions, text: str) -> list[StreamChunk]:
    return [
        BlockStartChunk(index=0, block_type="text"),
        TextDeltaChunk(index=0, text=text),
        BlockEndChunk(index=0, block=TextBlock(text=text)),
        usage_of(options, len(text) // 4),
        FinishChunk(reason=StopFinish()),
    ]


def call_chunks(options: GenerateOptions, call_id: str, arguments: str) -> list[StreamChunk]:
    return [
        BlockStartChunk(index=0, block_type="tool-call"),
        ToolCallDeltaChunk(index=0, id=call_id, name="probe", arguments_delta=arguments),
        BlockEndChunk(index=0, block=ToolCallBlock(id=call_id, name="probe", arguments=arguments)),
        usage_of(options, 10),
        FinishChunk(reason=ToolCallsFinish()),
    ]


def short_summary(options: GenerateOptions) -> str:
    return f"The user asked for probes; {len(options.messages)} messages so far, all probes answered."


class GrowingModel:
    """The script of a growing session; see the module docstring."""

    def __init__(
        self, steps: int, summary: Callable[[GenerateOptions], str | list[StreamChunk]] = short_summary
    ) -> None:
        self.steps = steps
        self.summary = summary
        self.calls = 0
        self.requests: list[GenerateOptions] = []
        self.summaries: list[GenerateOptions] = []

    def __call__(self, options: GenerateOptions) -> list[StreamChunk]:
        if is_summary_request(options):
            self.summaries.append(options)
            answer = self.summary(options)
            return text_chunks(options, answer) if isinstance(answer, str) else answer
        self.requests.append(options)
        if self.calls >= self.steps:
            return text_chunks(options, "all probes done")
        self.calls += 1
        return call_chunks(options, f"call-{self.calls}", f'{{"n":{self.calls}}}')

    def load(self, h: Harness, entries: int) -> None:
        h.model.push(*([self] * entries))


def register_probe(h: Harness, size: int = BIG) -> None:
    async def probe(args: Any, _execution: ToolExecution) -> Any:
        line = f"probe {args.get('n')} output line. "
        return (TextBlock(text=(line * (size // len(line) + 1))[:size]),)

    h.tools.register(
        ToolDefinition(name="probe", description="print a big output", parameters={"type": "object"}, execute=probe)
    )
