"""The chunk-protocol contract every model adapter obeys (SPEC §2.2), run over both twins.

``llm-deepseek`` (httpx + hand-parsed SSE, failures raised) and ``llm-openai`` (the
official SDK, failures in band) stream the same scripted wire scenarios from a real
local server. For every scenario and adapter the stream must obey the contract:

* every chunk is a valid ``StreamChunk``; nothing follows ``finish``; ``usage`` comes
  before ``finish``; a stream that did not raise ends with exactly one ``finish``;
* block indices open once, deltas never follow their ``block-end``, and each
  ``block-end`` carries exactly the block its deltas assemble to;
* tool-call arguments are raw strings end to end (never parsed, never re-encoded);
* a failure is either raised as ``LlmError`` or finished as ``error`` / ``aborted``.

And the twins must agree: equal assembled messages, the same finish, the same failure
code (however each reports it), and the same request on the wire for equivalent
settings. The tests are collected through ``tests/adapters/openai/test_contract.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from dsh.adapters.deepseek import DeepSeekAdapter
from dsh.adapters.openai import OpenAIAdapter
from dsh.core.errors import LlmError
from dsh.core.llm import (
    AbortedFinish,
    BlockAssembler,
    BlockEndChunk,
    BlockStartChunk,
    ContentBlock,
    ErrorFinish,
    FinishChunk,
    FinishReason,
    GenerateOptions,
    MaxTokensFinish,
    Message,
    ReasoningBlock,
    ReasoningDeltaChunk,
    StopFinish,
    StreamChunk,
    TextDeltaChunk,
    ToolCallBlock,
    ToolCallDeltaChunk,
    ToolCallsFinish,
    ToolResultBlock,
    ToolSchema,
    parse_stream_chunk,
    text,
    to_json,
    variant_tag,
)
from dsh.kernel import AbortController, AbortError
from dsh.testing.wire import (
    Entry,
    Finish,
    Raw,
    ReasoningDelta,
    Reply,
    TextDelta,
    ToolCallDelta,
    Usage,
    WireServer,
    api_error,
    text_reply,
    tool_call,
)

KEY = "sk-contract"

Adapter = DeepSeekAdapter | OpenAIAdapter

ADAPTERS: dict[str, Callable[[str], Adapter]] = {
    "llm-deepseek": lambda base_url: DeepSeekAdapter(KEY, base_url),
    "llm-openai": lambda base_url: OpenAIAdapter(KEY, base_url),
}


@dataclass(frozen=True)
class Scenario:
    """One scripted answer and what both adapters must make of it.

    ``finish`` is the expected finish of a stream that completes (in-band errors such
    as an unknown finish reason included); ``code`` marks a failure, which an adapter
    may raise or finish in band. ``content`` is the assembled message content either way.
    """

    name: str
    reply: Entry
    content: list[ContentBlock] = field(default_factory=list)
    finish: FinishReason | None = None
    code: str | None = None


def _call(call_id: str, name: str, arguments: str) -> ContentBlock:
    return ToolCallBlock(id=call_id, name=name, arguments=arguments)


SCENARIOS = [
    Scenario("text", text_reply("Hel", "lo", usage=Usage(3, 1)), [text("Hello")], StopFinish()),
    Scenario(
        "reasoning then text",
        text_reply("4", reasoning=["2+2", " is 4"], usage=Usage(20, 6, cached_tokens=16, reasoning_tokens=4)),
        [ReasoningBlock("2+2 is 4"), text("4")],
        StopFinish(),
    ),
    Scenario(
        "parallel tool calls after text, trailing usage",
        Reply(
            [
                ReasoningDelta(""),
                TextDelta("Checking."),
                *tool_call(0, "call_a", "weather", '{"city": "Paris"}', pieces=3),
                *tool_call(1, "call_b", "time", "{}"),
                Finish("tool_calls"),
                Usage(30, 12),
            ]
        ),
        [text("Checking."), _call("call_a", "weather", '{"city": "Paris"}'), _call("call_b", "time", "{}")],
        ToolCallsFinish(),
    ),
    Scenario(
        "raw arguments that are not JSON",
        Reply([*tool_call(0, "c1", "f", "{broken , 'x'", pieces=4), Finish("tool_calls")]),
        [_call("c1", "f", "{broken , 'x'")],
        ToolCallsFinish(),
    ),
    Scenario(
        "tool deltas that never carry id or name",
        Reply([ToolCallDelta(0, '{"a":'), ToolCallDelta(0, "1}"), Finish("tool_calls")]),
        [_call("", "", '{"a":1}')],
        ToolCallsFinish(),
    ),
    Scenario("max tokens", text_reply("trunc", finish="length"), [text("trunc")], MaxTokensFinish()),
    Scenario(
        "unknown finish reason",
        text_reply("redac", finish="content_filter"),
        [text("redac")],
        ErrorFinish(message="model stopped: content_filter", code="CONTENT_FILTER"),
    ),
    Scenario(
        "usage on a trailing chunk", Reply([TextDelta("x"), Finish("stop"), Usage(5, 2)]), [text("x")], StopFinish()
    ),
    Scenario("HTTP 401", api_error(401, "bad key"), code="AUTH"),
    Scenario("HTTP 400", api_error(400, "bad request"), code="INVALID_REQUEST"),
    Scenario("HTTP 429", api_error(429, "slow down"), code="RATE_LIMIT"),
    Scenario("HTTP 503", api_error(503, "overloaded"), code="SERVER"),
    Scenario(
        "dropped mid-stream", Reply([TextDelta("partial")], ending="cut"), [text("partial")], code="STREAM_CLOSED"
    ),
    Scenario(
        "ended before any finish", Reply([TextDelta("partial")], ending="end"), [text("partial")], code="STREAM_CLOSED"
    ),
    Scenario("malformed payload", Reply([TextDelta("ok"), Raw("{not json")]), [text("ok")], code="MALFORMED_RESPONSE"),
]

TOOLS: list[ToolSchema] = [
    ToolSchema("weather", "Weather for a city.", {"type": "object"}, strict=True),
    ToolSchema("time", "The time.", {"type": "object"}),
]


def _options(**fields: object) -> GenerateOptions:
    opts = GenerateOptions(model="deepseek-v4-flash", messages=[Message("user", (text("hi"),))])
    for key, value in fields.items():
        setattr(opts, key, value)
    return opts


@dataclass
class Outcome:
    """What one adapter made of one scenario: the chunks it yielded and what it raised."""

    chunks: list[StreamChunk]
    raised: LlmError | None

    @property
    def finish(self) -> FinishReason | None:
        last = self.chunks[-1] if self.chunks else None
        return last.reason if type(last) is FinishChunk else None

    @property
    def failure_code(self) -> str | None:
        """The failure's code, raised or in band (None for a completed stream)."""
        if self.raised is not None:
            return self.raised.code
        finish = self.finish
        if type(finish) is ErrorFinish:
            return finish.code or None
        return None

    def content(self) -> list[ContentBlock]:
        assembler = BlockAssembler()
        for chunk in self.chunks:
            assembler.push(chunk)
        return assembler.blocks()


async def _run(adapter_name: str, reply: Entry) -> Outcome:
    async with WireServer([reply]) as server, ADAPTERS[adapter_name](server.base_url) as adapter:
        chunks: list[StreamChunk] = []
        try:
            async for chunk in adapter.stream(_options()):
                chunks.append(chunk)
        except LlmError as error:
            return Outcome(chunks, error)
        return Outcome(chunks, None)


def _assert_protocol(outcome: Outcome, *, completed: bool) -> None:
    """The SPEC §2.2 chunk contract; see the module docstring. A ``completed`` stream closes every block."""
    chunks = outcome.chunks
    for chunk in chunks:
        assert parse_stream_chunk(to_json(chunk)) == chunk  # a valid chunk, whose JSON decodes back to it
    types = [variant_tag(chunk) for chunk in chunks]
    if outcome.raised is None:
        assert types.count("finish") == 1
        assert types[-1] == "finish"
    else:
        assert "finish" not in types  # raised instead of finishing
    for position, kind in enumerate(types):
        if kind == "usage":
            assert "finish" not in types[:position]
    started: set[int] = set()
    ended: set[int] = set()
    deltas: dict[int, BlockAssembler] = {}
    for chunk in chunks:
        if type(chunk) is BlockStartChunk:
            assert chunk.index not in started
            started.add(chunk.index)
        elif isinstance(chunk, TextDeltaChunk | ReasoningDeltaChunk | ToolCallDeltaChunk):
            index = chunk.index
            assert index in started
            assert index not in ended
            if type(chunk) is ToolCallDeltaChunk:
                assert isinstance(chunk.arguments_delta, str)
            deltas.setdefault(index, BlockAssembler()).push(chunk)
        elif type(chunk) is BlockEndChunk:
            index = chunk.index
            assert index in started
            assert index not in ended
            ended.add(index)
            block = chunk.block
            assert [block] == deltas[index].blocks()  # the block its own deltas assemble to
            if type(block) is ToolCallBlock:
                assert isinstance(block.arguments, str)
    if completed:
        assert ended == started


@pytest.mark.parametrize("adapter_name", list(ADAPTERS))
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario.name for scenario in SCENARIOS])
async def test_every_adapter_obeys_the_chunk_protocol(adapter_name: str, scenario: Scenario) -> None:
    """adapter contract: usage before finish, nothing after finish, raw tool arguments, assembled block-ends"""
    outcome = await _run(adapter_name, scenario.reply)
    _assert_protocol(outcome, completed=scenario.code is None)
    assert outcome.content() == scenario.content
    if scenario.code is None:
        assert outcome.raised is None
        assert outcome.finish == scenario.finish
    else:
        assert outcome.failure_code == scenario.code  # raised or finished as error, either is allowed


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario.name for scenario in SCENARIOS])
async def test_the_twins_produce_equal_assembled_messages(scenario: Scenario) -> None:
    """llm-deepseek and llm-openai assemble the same message, finish and failure code from the same wire"""
    deepseek = await _run("llm-deepseek", scenario.reply)
    twin = await _run("llm-openai", scenario.reply)
    assert deepseek.content() == twin.content()
    assert deepseek.failure_code == twin.failure_code
    if scenario.code is None:
        assert deepseek.finish == twin.finish
    else:
        assert twin.raised is None  # the twin reports failures in band
        assert type(twin.finish) is ErrorFinish


async def test_the_twins_send_the_same_request_for_equivalent_settings() -> None:
    """equivalent thinking settings and the same options give JSON-equal request bodies"""
    history: list[Message] = [
        Message("user", (text("weather?"),)),
        Message("assistant", (ReasoningBlock("call it"), _call("c1", "weather", "{broken"))),
        Message("user", (ToolResultBlock(tool_call_id="c1", content=()), text("and?"))),
        Message("system", (text("be brief"),)),
        Message("assistant", ()),
    ]
    options = _options(system="sys", messages=history, tools=TOOLS, temperature=0.5, max_tokens=99, stop=["END"])
    settings = [("enabled", "high", "high"), ("enabled", "max", "xhigh"), ("disabled", None, "off")]
    async with WireServer([text_reply("ok")] * 2 * len(settings)) as server:
        for thinking, effort, reasoning in settings:
            async with (
                DeepSeekAdapter(KEY, server.base_url, thinking=thinking, reasoning_effort=effort) as deepseek,  # type: ignore[arg-type]
                OpenAIAdapter(KEY, server.base_url, reasoning=reasoning) as twin,  # type: ignore[arg-type]
            ):
                await _drain(deepseek, options)
                await _drain(twin, options)
    bodies = [request.json for request in server.requests]
    for first, second in zip(bodies[::2], bodies[1::2], strict=True):
        assert first == second
    assert bodies[0]["messages"][2]["tool_calls"][0]["function"]["arguments"] == "{broken"


async def _drain(adapter: Adapter, options: GenerateOptions) -> None:
    async for _ in adapter.stream(options):
        pass


@pytest.mark.parametrize("adapter_name", list(ADAPTERS))
async def test_an_abort_mid_stream_ends_the_stream_and_releases_the_connection(adapter_name: str) -> None:
    """an abort while the server stalls ends the stream (AbortError raised or finish aborted) and closes the connection"""
    async with (
        WireServer([Reply([TextDelta("partial")], ending="stall")]) as server,
        ADAPTERS[adapter_name](server.base_url) as adapter,
    ):
        controller = AbortController()
        stream = adapter.stream(_options(signal=controller.signal))
        seen = [await anext(stream), await anext(stream)]
        pending = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0)
        controller.abort("stop")
        ending: StreamChunk | AbortError
        try:
            seen.append(await pending)
            seen.extend([chunk async for chunk in stream])
            ending = seen[-1]
        except AbortError as error:
            ending = error
        if isinstance(ending, AbortError):
            assert ending.reason == "stop"  # raised, carrying the signal's reason
        else:
            assert ending == FinishChunk(reason=AbortedFinish())  # or finished in band
        await server.wait_for_connections(0)
        assert [variant_tag(chunk) for chunk in seen[:2]] == ["block-start", "text-delta"]


@pytest.mark.parametrize("adapter_name", list(ADAPTERS))
async def test_closing_the_stream_early_releases_the_connection(adapter_name: str) -> None:
    """a consumer that stops iterating (aclose) makes the adapter close the upstream response"""
    async with (
        WireServer([Reply([TextDelta("partial")], ending="stall")]) as server,
        ADAPTERS[adapter_name](server.base_url) as adapter,
    ):
        stream = adapter.stream(_options())
        assert type(await anext(stream)) is BlockStartChunk
        await stream.aclose()  # type: ignore[attr-defined]
        await server.wait_for_connections(0)
