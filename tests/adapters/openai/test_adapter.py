"""SPEC §11 adapter tests over real HTTP against the wire server, through the real kernel and llm service.

The title group ``PiAiAdapter against a mock server`` carries over to the SDK-backed
twin: what pi-ai's ``onPayload`` hook injected is asserted on the request the wire
server recorded.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import dsh.adapters.openai as llm_openai
from dsh.adapters.openai import OpenAIAdapter
from dsh.core.errors import LlmError
from dsh.core.llm import (
    FinishChunk,
    LlmService,
    Message,
    StreamChunk,
    ToolCallBlock,
    ToolResultBlock,
    ToolSchema,
    text,
    to_json,
)
from dsh.kernel import Context
from dsh.testing.wire import (
    Finish,
    HttpError,
    Raw,
    RawResponse,
    ReasoningDelta,
    Reply,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
    WireServer,
    api_error,
    text_reply,
    tool_call,
)
from tests.adapters.openai.helpers import KEY, collect, kinds, options

WEATHER = ToolSchema(
    name="weather",
    description="Weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


async def load(root: Context, server: WireServer, **config: object) -> OpenAIAdapter:
    """Load llm-openai against ``server`` and return its adapter (the fiber's instance)."""
    fiber = await root.plugin(llm_openai, {"apiKey": KEY, "baseURL": server.base_url, **config})
    adapter = fiber.instance
    assert isinstance(adapter, OpenAIAdapter)
    return adapter


async def finish_of(llm: LlmService, **fields: Any) -> tuple[list[StreamChunk], dict[str, Any]]:
    """The chunks of one call and its finish reason in JSON form."""
    chunks = await collect(llm.stream(options(**fields)))
    last = chunks[-1]
    assert type(last) is FinishChunk
    return chunks, to_json(last.reason)


@contextmanager
def socket_that_refuses() -> Iterator[int]:
    """A port on 127.0.0.1 that is bound but not listening: connections are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


# ----------------------------------------------------------- PiAiAdapter against a mock server
async def test_streams_a_text_generation_through_ctx_llm_generate(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """PiAiAdapter against a mock server / streams a text generation through ctx.llm.generate"""
    server.add(text_reply("hel", "lo", usage=Usage(3, 1)))
    await load(root, server)
    result = await llm.generate(options("deepseek-v4-flash", "say hello"))
    assert to_json(result.message) == {"role": "assistant", "content": [{"type": "text", "text": "hello"}]}
    assert to_json(result.finish) == {"kind": "stop"}
    assert to_json(result.usage) == {"inputTokens": 3, "outputTokens": 1}
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/chat/completions")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = request.json
    assert body["model"] == "deepseek-v4-flash"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [{"role": "user", "content": "say hello"}]
    assert request.headers["x-stainless-retry-count"] == "0"


async def test_streams_tool_calls_with_re_stringified_arguments(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """PiAiAdapter against a mock server / streams tool calls with re-stringified arguments

    The SDK hands arguments over as raw strings, so they arrive exactly as streamed.
    """
    events: list[StreamEvent] = [
        *tool_call(0, "call_1", "weather", '{"city":"Paris"}', pieces=3),
        Finish("tool_calls", Usage(9, 4)),
    ]
    server.add(Reply(events))
    await load(root, server)
    result = await llm.generate(options(tools=[WEATHER]))
    assert to_json(result.message.content) == [
        {"type": "tool-call", "id": "call_1", "name": "weather", "arguments": '{"city":"Paris"}'}
    ]
    assert to_json(result.finish) == {"kind": "tool-calls"}


async def test_maps_reasoning_content_streams_to_reasoning_blocks(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """PiAiAdapter against a mock server / maps reasoning_content streams to reasoning blocks"""
    server.add(text_reply("4", reasoning=["2+2", " is 4"], usage=Usage(20, 6, cached_tokens=16, reasoning_tokens=4)))
    await load(root, server)
    result = await llm.generate(options())
    assert to_json(result.message.content) == [{"type": "reasoning", "text": "2+2 is 4"}, {"type": "text", "text": "4"}]
    assert to_json(result.usage) == {"inputTokens": 4, "outputTokens": 6, "cacheReadTokens": 16}


async def test_sends_DeepSeek_thinking_fields_when_reasoning_is_configured(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """PiAiAdapter against a mock server / sends DeepSeek thinking fields when reasoning is configured"""
    server.add(text_reply("a"), text_reply("b"))
    await load(root, server, reasoning="xhigh", models=["x"])
    await load(root, server, reasoning="high", models=["h"])
    await llm.generate(options("x"))
    await llm.generate(options("h"))
    assert server.requests[0].json["thinking"] == {"type": "enabled"}
    assert server.requests[0].json["reasoning_effort"] == "max"
    assert server.requests[1].json["thinking"] == {"type": "enabled"}
    assert server.requests[1].json["reasoning_effort"] == "high"


async def test_disables_thinking_for_reasoning_off(root: Context, llm: LlmService, server: WireServer) -> None:
    """PiAiAdapter against a mock server / disables thinking for reasoning: off"""
    server.add(text_reply("a"))
    await load(root, server, reasoning="off")
    await llm.generate(options())
    body = server.requests[0].json
    assert body["thinking"] == {"type": "disabled"}
    assert "reasoning_effort" not in body


async def test_injects_stop_sequences_through_onPayload(root: Context, llm: LlmService, server: WireServer) -> None:
    """PiAiAdapter against a mock server / injects stop sequences through onPayload"""
    server.add(text_reply("a"), text_reply("b"))
    await load(root, server)
    await llm.generate(options(stop=["END", "\n\n"]))
    await llm.generate(options())
    assert server.requests[0].json["stop"] == ["END", "\n\n"]
    assert "stop" not in server.requests[1].json


async def test_preserves_per_tool_strict_exactly_through_onPayload(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """PiAiAdapter against a mock server / preserves per-tool strict exactly through onPayload"""
    server.add(text_reply("a"))
    await load(root, server)
    tools: list[ToolSchema] = [
        ToolSchema("strict_true", WEATHER.description, WEATHER.parameters, strict=True),
        ToolSchema("strict_false", WEATHER.description, WEATHER.parameters, strict=False),
        ToolSchema("strict_absent", WEATHER.description, WEATHER.parameters),
    ]
    await llm.generate(options(tools=tools))
    functions = [tool["function"] for tool in server.requests[0].json["tools"]]
    assert [tool["type"] for tool in server.requests[0].json["tools"]] == ["function"] * 3
    assert functions[0]["strict"] is True
    assert functions[1]["strict"] is False
    assert "strict" not in functions[2]
    assert functions[2] == {
        "name": "strict_absent",
        "description": WEATHER.description,
        "parameters": WEATHER.parameters,
    }


async def test_preserves_raw_replayed_tool_call_arguments_in_the_provider_payload(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """PiAiAdapter against a mock server / preserves raw replayed tool-call arguments in the provider payload"""
    server.add(text_reply("ok"))
    await load(root, server)
    broken = ToolCallBlock(id="call_x", name="weather", arguments="{broken")
    history: list[Message] = [
        Message("user", (text("go"),)),
        Message("assistant", (broken,)),
        Message("user", (ToolResultBlock(tool_call_id="call_x", content=(text("err"),)),)),
    ]
    await llm.generate(options(messages=history))
    messages = server.requests[0].json["messages"]
    assert messages[1]["tool_calls"][0]["function"]["arguments"] == "{broken"
    assert messages[2] == {"role": "tool", "tool_call_id": "call_x", "content": "err"}


async def test_maps_HTTP_errors_to_error_finish_chunks_pi_ai_in_stream_style(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """PiAiAdapter against a mock server / maps HTTP errors to error finish chunks (pi-ai in-stream style)"""
    server.add(api_error(401, "bad key", "authentication_error"))
    await load(root, server)
    chunks, reason = await finish_of(llm)
    assert kinds(chunks) == ["finish"]
    assert reason["kind"] == "error"
    assert reason["code"] == "AUTH"
    assert "bad key" in str(reason["message"]) or "401" in str(reason["message"])
    result = await generate_failure(llm, server, api_error(401, "bad key"))
    assert result == {"kind": "error", "message": "bad key", "code": "AUTH", "status": 401}


async def generate_failure(llm: LlmService, server: WireServer, entry: object) -> object:
    """The finish reason (JSON form) of one generate call answered by ``entry``."""
    server.add(entry)  # type: ignore[arg-type]
    return to_json((await llm.generate(options())).finish)


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (400, "INVALID_REQUEST"),
        (403, "AUTH"),
        (404, "HTTP_404"),
        (418, "HTTP_418"),
        (422, "HTTP_422"),
        (429, "RATE_LIMIT"),
        (500, "SERVER"),
        (503, "SERVER"),
    ],
)
async def test_maps_HTTP_status_to_stable_error_code(
    root: Context, llm: LlmService, server: WireServer, status: int, code: str
) -> None:
    """PiAiAdapter against a mock server / maps HTTP %s to stable error code %s"""
    server.add(api_error(status, f"provider says no ({status})"))
    await load(root, server)
    _, reason = await finish_of(llm)
    assert reason == {"kind": "error", "message": f"provider says no ({status})", "code": code, "status": status}


async def test_keeps_a_status_line_message_for_error_bodies_without_a_message(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """JSON bodies without a message, non-JSON bodies and cut-off bodies keep a status-line message"""
    server.add(
        HttpError(500, {"error": {"type": "server_error"}}),
        HttpError(500, {"detail": "x"}),
        HttpError(502, "<html>Bad Gateway</html>", "text/html"),
        HttpError(429, {"error": {"message": ""}}),
    )
    await load(root, server)
    expected = [(500, "SERVER"), (500, "SERVER"), (502, "SERVER"), (429, "RATE_LIMIT")]
    for status, code in expected:
        _, reason = await finish_of(llm)
        assert reason == {
            "kind": "error",
            "message": f"provider API error (HTTP {status})",
            "code": code,
            "status": status,
        }


async def test_rejects_prefill_with_UNSUPPORTED(root: Context, llm: LlmService, server: WireServer) -> None:
    """PiAiAdapter against a mock server / rejects prefill with UNSUPPORTED"""
    await load(root, server)
    with pytest.raises(LlmError) as caught:
        await llm.generate(options(prefill=[text("Sure")]))
    assert caught.value.code == "UNSUPPORTED"
    assert "prefill is not supported" in str(caught.value)
    assert server.requests == []


# ---------------------------------------------------------------- in-band stream failures
async def test_a_server_that_drops_mid_stream_finishes_with_STREAM_CLOSED(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """a connection dropped mid-body (either framing) ends in band with STREAM_CLOSED after the partial deltas"""
    partial: list[StreamEvent] = [TextDelta("partial"), Usage(4, 1)]
    server.add(Reply(partial, ending="cut"), Reply(partial, ending="cut", framing="close"))
    await load(root, server)
    messages = []
    for _ in range(2):
        chunks, reason = await finish_of(llm)
        assert kinds(chunks) == ["block-start", "text-delta", "usage", "finish"]
        assert (reason["kind"], reason["code"]) == ("error", "STREAM_CLOSED")
        messages.append(reason["message"])
    # chunked framing: the transport sees the break; close framing: the body just ends early
    assert messages == [
        "the provider's stream broke off: peer closed connection without sending complete message body "
        "(incomplete chunked read)",
        "the provider's stream ended without a finish_reason",
    ]


async def test_a_stream_that_ends_without_a_finish_reason_finishes_with_STREAM_CLOSED(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """a body that ends (with or without [DONE]) before any finish_reason is STREAM_CLOSED"""
    server.add(Reply([TextDelta("x")], ending="end"), Reply([TextDelta("y")]))
    await load(root, server)
    for expected in ("x", "y"):
        result = await llm.generate(options())
        assert to_json(result.finish) == {
            "kind": "error",
            "message": "the provider's stream ended without a finish_reason",
            "code": "STREAM_CLOSED",
        }
        assert to_json(result.message.content) == [{"type": "text", "text": expected}]


async def test_a_malformed_payload_finishes_with_MALFORMED_RESPONSE(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """a payload that is not JSON ends the stream in band with MALFORMED_RESPONSE"""
    server.add(Reply([TextDelta("ok"), Raw("{not json")]))
    await load(root, server)
    chunks, reason = await finish_of(llm)
    assert kinds(chunks) == ["block-start", "text-delta", "finish"]
    assert reason["code"] == "MALFORMED_RESPONSE"
    assert str(reason["message"]).startswith("malformed stream payload: ")


async def test_an_error_event_in_the_stream_keeps_the_provider_message_and_code(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """a mid-stream {"error": ...} event finishes with the provider's message and code (PROVIDER_ERROR without one)"""
    server.add(
        Reply([TextDelta("a"), Raw('{"error":{"message":"overloaded","code":"server_busy"}}')]),
        Reply([Raw('{"error":{"message":"gone"}}')]),
    )
    await load(root, server)
    _, first = await finish_of(llm)
    _, second = await finish_of(llm)
    assert first == {"kind": "error", "message": "overloaded", "code": "server_busy"}
    assert second == {"kind": "error", "message": "gone", "code": "PROVIDER_ERROR"}


async def test_an_unknown_finish_reason_is_an_in_band_error(root: Context, llm: LlmService, server: WireServer) -> None:
    """finish_reason content_filter becomes finish error CONTENT_FILTER after the blocks closed"""
    server.add(text_reply("redac", finish="content_filter", usage=Usage(2, 1)))
    await load(root, server)
    chunks, reason = await finish_of(llm)
    assert kinds(chunks) == ["block-start", "text-delta", "block-end", "usage", "finish"]
    assert reason == {"kind": "error", "message": "model stopped: content_filter", "code": "CONTENT_FILTER"}


async def test_unreachable_endpoints_finish_with_NETWORK_naming_the_url(root: Context, llm: LlmService) -> None:
    """a refused connection or an unusable base URL ends in band with NETWORK and says where to fix it"""
    with socket_that_refuses() as port:
        await root.plugin(llm_openai, {"apiKey": KEY, "baseURL": f"http://127.0.0.1:{port}", "models": ["a"]})
        _, reason = await finish_of(llm, model="a")
    assert reason["code"] == "NETWORK"
    assert f"http://127.0.0.1:{port}/chat/completions" in str(reason["message"])
    assert "baseURL" in str(reason["message"])
    await root.plugin(llm_openai, {"apiKey": KEY, "baseURL": "", "models": ["b"]})
    _, reason = await finish_of(llm, model="b")
    assert reason["code"] == "NETWORK"
    assert "DEEPSEEK_BASE_URL" in str(reason["message"])


async def test_garbage_field_types_count_as_absent(root: Context, llm: LlmService, server: WireServer) -> None:
    """wrongly typed fields in stream chunks are ignored rather than breaking the chunk contract"""
    garbage: list[StreamEvent] = [
        Raw("[1,2]"),
        Raw('{"choices":"nope","usage":5}'),
        Raw('{"choices":[7,{"delta":"x","finish_reason":3}]}'),
        Raw('{"choices":[{"delta":{"content":5,"reasoning_content":["r"],"tool_calls":"t"}}]}'),
        Raw('{"choices":[{"delta":{"tool_calls":[{"index":"0","id":9,"function":"f"},1]}}]}'),
        Raw('{"choices":[{"delta":{"tool_calls":[{"index":"0","function":{"name":1,"arguments":2}}]}}]}'),
        ToolCallDelta(1, None, "call_ok", "ok"),
        Raw('{"choices":[],"usage":{"prompt_tokens":"9","completion_tokens":true,"prompt_tokens_details":"d"}}'),
        Finish("tool_calls"),
    ]
    server.add(Reply(garbage))
    await load(root, server)
    chunks = await collect(llm.stream(options()))
    assert to_json(chunks) == [
        {"type": "block-start", "index": 0, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 0, "id": "", "argumentsDelta": ""},
        {"type": "tool-call-delta", "index": 0, "id": "", "argumentsDelta": ""},
        {"type": "block-start", "index": 1, "blockType": "tool-call"},
        {"type": "tool-call-delta", "index": 1, "id": "call_ok", "name": "ok", "argumentsDelta": ""},
        {"type": "block-end", "index": 0, "block": {"type": "tool-call", "id": "", "name": "", "arguments": ""}},
        {
            "type": "block-end",
            "index": 1,
            "block": {"type": "tool-call", "id": "call_ok", "name": "ok", "arguments": ""},
        },
        {"type": "usage", "usage": {"inputTokens": 0, "outputTokens": 0}},
        {"type": "finish", "reason": {"kind": "tool-calls"}},
    ]


async def test_a_garbage_http_answer_finishes_with_NETWORK(root: Context, llm: LlmService, server: WireServer) -> None:
    """an answer that is not HTTP at all fails the request in band (the SDK reports a connection error)"""
    server.add(RawResponse(b"garbage\r\n\r\n"))
    await load(root, server)
    _, reason = await finish_of(llm)
    assert reason["code"] == "NETWORK"


async def test_reasoning_and_text_interleave_with_tool_calls_by_first_appearance(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """block indices follow first appearance across reasoning, text and parallel tool calls"""
    events: list[StreamEvent] = [
        ReasoningDelta(""),
        ReasoningDelta("plan"),
        TextDelta("Checking both."),
        *tool_call(1, "call_b", "time", "{}"),
        *tool_call(0, "call_a", "weather", '{"city":"Rome"}'),
        Finish("tool_calls"),
    ]
    server.add(Reply(events))
    await load(root, server)
    result = await llm.generate(options())
    assert to_json(result.message.content) == [
        {"type": "reasoning", "text": "plan"},
        {"type": "text", "text": "Checking both."},
        {"type": "tool-call", "id": "call_b", "name": "time", "arguments": "{}"},
        {"type": "tool-call", "id": "call_a", "name": "weather", "arguments": '{"city":"Rome"}'},
    ]
    assert result.usage is None


async def test_a_request_the_SDK_cannot_encode_finishes_in_band_without_sending(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """a tool schema holding a non-JSON value fails in band (code UNKNOWN, the encoder's message); nothing is sent"""
    await load(root, server)
    bad = ToolSchema(name="t", description="d", parameters={"default": object()})
    _, reason = await finish_of(llm, tools=[bad])
    assert reason == {"kind": "error", "message": "Object of type object is not JSON serializable", "code": "UNKNOWN"}
    assert server.requests == []
