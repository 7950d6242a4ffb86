"""SPEC §10 adapter tests over real HTTP against the wire server, through the real kernel and llm service."""

from __future__ import annotations

import socket
from pathlib import Path

import aiohttp
import pytest

import dsh.adapters.deepseek as deepseek
from dsh.adapters.deepseek import (
    DEFAULT_MODELS,
    PUBLIC_BASE_URL,
    USER_AGENT,
    Config,
    DeepSeekAdapter,
    http_error_code,
)
from dsh.core.errors import LlmError
from dsh.core.llm import (
    LLM,
    LLM_ADAPTER_CHANGE,
    LlmAdapter,
    LlmService,
    Message,
    ReasoningBlock,
    StopFinish,
    StreamChunk,
    TextDeltaChunk,
    TokenUsage,
    ToolCallBlock,
    ToolCallsFinish,
    text,
)
from dsh.kernel import AbortController, AbortError, ConfigError, Context, LoaderError, load_tree
from dsh.testing.wire import (
    Finish,
    HttpError,
    NoBody,
    RawResponse,
    ReasoningDelta,
    Reply,
    StreamEvent,
    TextDelta,
    Usage,
    WireServer,
    api_error,
    text_reply,
    tool_call,
)
from tests.adapters.deepseek.helpers import collect, kinds, options

KEY = "sk-test"


async def load(root: Context, **config: object) -> DeepSeekAdapter:
    """Load the llm-deepseek plugin and return its adapter (the fiber's instance)."""
    fiber = await root.plugin(deepseek, config)
    adapter = fiber.instance
    assert isinstance(adapter, DeepSeekAdapter)
    return adapter


async def failure(llm: LlmService) -> LlmError:
    with pytest.raises(LlmError) as caught:
        await llm.generate(options())
    return caught.value


# -------------------------------------------------------- against a mock server
async def test_streams_a_text_generation_end_to_end_through_ctx_llm_generate(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """DeepSeekAdapter against a mock server / streams a text generation end to end through ctx.llm.generate"""
    server.add(text_reply("hel", "lo", usage=Usage(3, 1)))
    await load(root, apiKey=KEY, baseURL=server.base_url)
    result = await llm.generate(options("deepseek-v4-flash", "say hello"))
    assert result.message == Message("assistant", (text("hello"),))
    assert result.finish == StopFinish()
    assert result.usage == TokenUsage(3, 1)
    (request,) = server.requests
    assert (request.method, request.path) == ("POST", "/chat/completions")
    assert request.json["model"] == "deepseek-v4-flash"
    assert request.json["stream"] is True
    assert request.json["stream_options"] == {"include_usage": True}
    assert request.json["messages"] == [{"role": "user", "content": "say hello"}]
    assert request.headers["user-agent"].startswith("deepseek-harness/")
    assert request.headers["user-agent"] == USER_AGENT
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.headers["accept"] == "text/event-stream"
    assert request.headers["content-type"] == "application/json"
    assert b", " not in request.body  # compact JSON on the wire


async def test_streams_raw_chunks_through_ctx_llm_stream(root: Context, llm: LlmService, server: WireServer) -> None:
    """DeepSeekAdapter against a mock server / streams raw chunks through ctx.llm.stream"""
    server.add(text_reply("hi", usage=Usage(2, 1)))
    await load(root, apiKey=KEY, baseURL=server.base_url)
    chunks = await collect(llm.stream(options()))
    assert kinds(chunks) == ["block-start", "text-delta", "block-end", "usage", "finish"]


async def test_forwards_thinking_config_onto_the_wire(root: Context, llm: LlmService, server: WireServer) -> None:
    """DeepSeekAdapter against a mock server / forwards thinking config onto the wire"""
    server.add(text_reply("ok"))
    await load(root, apiKey=KEY, baseURL=server.base_url, thinking="disabled", reasoningEffort="high")
    await llm.generate(options())
    body = server.requests[0].json
    assert body["thinking"] == {"type": "disabled"}
    assert body["reasoning_effort"] == "high"


async def test_streams_reasoning_and_tool_calls_over_http(root: Context, llm: LlmService, server: WireServer) -> None:
    """a thinking-mode tool-call answer assembles into reasoning + tool-call blocks"""
    events: list[StreamEvent] = [
        ReasoningDelta(""),
        ReasoningDelta("weather?"),
        *tool_call(0, "call_1", "weather", '{"city":"Paris"}'),
    ]
    server.add(Reply([*events, Finish("tool_calls", Usage(20, 5, cached_tokens=8, reasoning_tokens=3))]))
    await load(root, apiKey=KEY, baseURL=server.base_url)
    result = await llm.generate(options())
    assert result.message.content == (
        ReasoningBlock("weather?"),
        ToolCallBlock(id="call_1", name="weather", arguments='{"city":"Paris"}'),
    )
    assert result.finish == ToolCallsFinish()
    assert result.usage == TokenUsage(12, 5, cache_read_tokens=8, reasoning_tokens=3)


@pytest.mark.parametrize(
    ("status", "code"),
    [(401, "AUTH"), (403, "AUTH"), (429, "RATE_LIMIT"), (400, "INVALID_REQUEST"), (500, "SERVER"), (503, "SERVER")],
)
async def test_maps_HTTP_status_to_LlmError_code_with_the_body_message(
    root: Context, llm: LlmService, server: WireServer, status: int, code: str
) -> None:
    """DeepSeekAdapter against a mock server / maps HTTP %d to LlmError code %s with the body message"""
    server.add(api_error(status, f"provider says no ({status})"))
    await load(root, apiKey=KEY, baseURL=server.base_url)
    error = await failure(llm)
    assert str(error) == f"provider says no ({status})"
    assert error.code == code
    assert error.status == status


async def test_keeps_the_status_line_message_for_JSON_error_bodies_without_a_message(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """DeepSeekAdapter against a mock server / keeps the status-line message for JSON error bodies without a message"""
    server.add(HttpError(500, {"error": {"type": "server_error"}}), HttpError(500, {"detail": "x"}))
    await load(root, apiKey=KEY, baseURL=server.base_url)
    for _ in range(2):
        error = await failure(llm)
        assert str(error) == "DeepSeek API error (HTTP 500)"
        assert "HTTP 500" in str(error)
        assert (error.code, error.status) == ("SERVER", 500)


async def test_keeps_the_status_line_message_for_non_JSON_error_bodies(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """DeepSeekAdapter against a mock server / keeps the status-line message for non-JSON error bodies"""
    server.add(HttpError(502, "<html>Bad Gateway</html>", "text/html"), HttpError(502, "[1, 2]"))
    await load(root, apiKey=KEY, baseURL=server.base_url)
    for _ in range(2):
        error = await failure(llm)
        assert str(error) == "DeepSeek API error (HTTP 502)"
        assert (error.code, error.status) == ("SERVER", 502)


async def test_maps_unusual_statuses_to_HTTP_status(root: Context, llm: LlmService, server: WireServer) -> None:
    """DeepSeekAdapter against a mock server / maps unusual statuses to HTTP_<status>"""
    server.add(api_error(418, "short and stout"))
    await load(root, apiKey=KEY, baseURL=server.base_url)
    error = await failure(llm)
    assert (error.code, error.status, str(error)) == ("HTTP_418", 418, "short and stout")
    assert [http_error_code(s) for s in (301, 404, 499, 599)] == ["HTTP_301", "HTTP_404", "HTTP_499", "SERVER"]


async def test_keeps_the_status_line_message_when_the_error_body_breaks_off(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """an error body cut short by the server keeps the status-line message"""
    server.add(RawResponse(b'HTTP/1.1 429 Too Many Requests\r\ncontent-length: 400\r\n\r\n{"error":{"mess'))
    await load(root, apiKey=KEY, baseURL=server.base_url)
    error = await failure(llm)
    assert (str(error), error.code, error.status) == ("DeepSeek API error (HTTP 429)", "RATE_LIMIT", 429)


async def test_throws_EMPTY_RESPONSE_when_the_response_has_no_body(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """DeepSeekAdapter against a mock server / throws EMPTY_RESPONSE when the response has no body"""
    server.add(NoBody(204), NoBody(200), Reply([], ending="end", framing="close"))
    await load(root, apiKey=KEY, baseURL=server.base_url)
    for _ in range(3):
        error = await failure(llm)
        assert error.code == "EMPTY_RESPONSE"
        assert "no response body" in str(error)


@pytest.mark.parametrize("framing", ["chunked", "close"])
async def test_rejects_with_STREAM_CLOSED_when_the_server_drops_mid_stream(
    root: Context, llm: LlmService, server: WireServer, framing: str
) -> None:
    """DeepSeekAdapter against a mock server / rejects with STREAM_CLOSED when the server drops mid-stream"""
    server.add(Reply([TextDelta("partial")], ending="cut", framing=framing))  # type: ignore[arg-type]
    await load(root, apiKey=KEY, baseURL=server.base_url)
    seen: list[StreamChunk] = []
    with pytest.raises(LlmError, match=r"terminated|socket|without \[DONE\]") as caught:
        async for chunk in llm.stream(options()):
            seen.append(chunk)
    assert caught.value.code == "STREAM_CLOSED"
    assert kinds(seen) == ["block-start", "text-delta"]
    if framing == "chunked":  # aiohttp saw the chunked framing break; the cause says how
        assert isinstance(caught.value.__cause__, aiohttp.ClientPayloadError)


async def test_aborts_mid_stream_via_the_request_signal(root: Context, llm: LlmService, server: WireServer) -> None:
    """DeepSeekAdapter against a mock server / aborts mid-stream via the request signal"""
    server.add(Reply([ReasoningDelta(""), TextDelta("partial")], ending="stall"))
    await load(root, apiKey=KEY, baseURL=server.base_url)
    controller = AbortController()
    stream = llm.stream(options(signal=controller.signal))
    assert kinds([await anext(stream), await anext(stream)]) == ["block-start", "text-delta"]
    pending = anext(stream)
    controller.abort("user pressed stop")
    with pytest.raises(AbortError) as caught:
        await pending
    assert caught.value.reason == "user pressed stop"
    await server.wait_for_connections(0)  # the stalled connection was closed, not left in the pool


# ------------------------------------------------------ plugin registration and config
async def test_registers_the_configured_models_and_unregisters_on_dispose_HMR_safety(
    root: Context, llm: LlmService, server: WireServer, clean_env: pytest.MonkeyPatch
) -> None:
    """plugin registration and config / registers the configured models and unregisters on dispose (HMR safety)"""
    server.add(text_reply("pooled"))
    fiber = await root.plugin(deepseek, {"apiKey": KEY, "baseURL": server.base_url, "models": ["m-a", "m-b"]})
    assert llm.models() == ["m-a", "m-b"]
    assert deepseek.name == "llm-deepseek"
    assert deepseek.inject == ["llm"]
    await llm.generate(options("m-b"))
    assert server.open_connections == 1  # kept alive in the adapter's pool
    await fiber.dispose()
    assert llm.models() == []
    await server.wait_for_connections(0)  # unloading closed the adapter's HTTP client
    adapter = fiber.instance
    with pytest.raises(LlmError) as caught:
        await collect(adapter.stream(options("m-a")))
    assert caught.value.code == "CLOSED"
    again = await root.plugin(deepseek, {"apiKey": KEY, "models": ["m-a", "m-b"]})
    assert llm.models() == ["m-a", "m-b"]
    await again.dispose()


async def test_a_throwing_adapter_change_listener_fails_the_load_and_leaves_nothing_behind(
    root: Context, llm: LlmService, clean_env: pytest.MonkeyPatch
) -> None:
    """rollback: a throwing llm/adapter-change listener rejects the load; no model stays; names are reusable"""

    def veto() -> None:
        raise RuntimeError("vetoed by a listener")

    listener = root.on(LLM_ADAPTER_CHANGE, veto)
    with pytest.raises(RuntimeError, match="vetoed by a listener"):
        await root.plugin(deepseek, {"apiKey": KEY, "models": ["m-a"]})
    assert llm.models() == []
    listener()
    first = await root.plugin(deepseek, {"apiKey": KEY, "models": ["m-a"]})
    with pytest.raises(LlmError) as caught:
        await root.plugin(deepseek, {"apiKey": KEY, "models": ["m-b", "m-a"]})
    assert caught.value.code == "DUPLICATE_ADAPTER"
    assert llm.models() == ["m-a"]
    await first.dispose()
    assert llm.models() == []


async def test_defaults_the_model_list(root: Context, llm: LlmService, clean_env: pytest.MonkeyPatch) -> None:
    """plugin registration and config / defaults the model list"""
    adapter = await load(root, apiKey=KEY)
    assert llm.models() == ["deepseek-v4-flash", "deepseek-v4-pro"]
    assert list(DEFAULT_MODELS) == llm.models()
    assert adapter.models == DEFAULT_MODELS


async def test_falls_back_to_DEEPSEEK_API_KEY_and_DEEPSEEK_BASE_URL_env_vars(
    root: Context, llm: LlmService, server: WireServer, clean_env: pytest.MonkeyPatch
) -> None:
    """plugin registration and config / falls back to DEEPSEEK_API_KEY and DEEPSEEK_BASE_URL env vars"""
    clean_env.setenv("DEEPSEEK_API_KEY", "sk-from-env")
    clean_env.setenv("DEEPSEEK_BASE_URL", server.base_url)
    server.add(text_reply("env"))
    adapter = await load(root)
    assert adapter.base_url == server.base_url
    await llm.generate(options())
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env"


async def test_throws_a_clear_error_when_no_API_key_is_available(
    root: Context, llm: LlmService, clean_env: pytest.MonkeyPatch
) -> None:
    """plugin registration and config / throws a clear error when no API key is available"""
    with pytest.raises(LlmError, match="an API key is required") as caught:
        await root.plugin(deepseek, {})
    assert str(caught.value) == "llm-deepseek: an API key is required (Config.apiKey or $DEEPSEEK_API_KEY)"
    assert llm.models() == []
    clean_env.setenv("DEEPSEEK_API_KEY", "sk-from-env")
    with pytest.raises(LlmError, match="an API key is required"):
        await root.plugin(deepseek, {"apiKey": ""})  # explicit empty key: no fallback to the env
    assert llm.models() == []


async def test_prefers_explicit_config_over_env_for_key_and_base_URL(
    root: Context, llm: LlmService, server: WireServer, clean_env: pytest.MonkeyPatch
) -> None:
    """plugin registration and config / prefers explicit config over env for key and base URL"""
    clean_env.setenv("DEEPSEEK_API_KEY", "sk-from-env")
    clean_env.setenv("DEEPSEEK_BASE_URL", "http://127.0.0.1:9")
    server.add(text_reply("cfg"))
    adapter = await load(root, apiKey="sk-from-config", baseURL=server.base_url)
    assert adapter.base_url == server.base_url
    await llm.generate(options())
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-config"


async def test_uses_DEEPSEEK_BASE_URL_when_config_omits_baseURL(
    root: Context, llm: LlmService, server: WireServer, clean_env: pytest.MonkeyPatch
) -> None:
    """plugin registration and config / uses DEEPSEEK_BASE_URL when config omits baseURL"""
    clean_env.setenv("DEEPSEEK_BASE_URL", server.base_url)
    server.add(text_reply("x"))
    adapter = await load(root, apiKey=KEY)
    assert adapter.url == f"{server.base_url}/chat/completions"
    await llm.generate(options())
    assert len(server.requests) == 1


async def test_uses_a_set_but_empty_DEEPSEEK_BASE_URL_as_is(
    root: Context, llm: LlmService, clean_env: pytest.MonkeyPatch
) -> None:
    """an empty DEEPSEEK_BASE_URL is used as the base URL (nullish, not falsy); calls then fail clearly"""
    clean_env.setenv("DEEPSEEK_BASE_URL", "")
    adapter = await load(root, apiKey=KEY)
    assert adapter.base_url == ""
    error = await failure(llm)
    assert error.code == "NETWORK"
    assert "/chat/completions" in str(error)
    assert "baseURL" in str(error)


async def test_defaults_to_the_public_base_URL_without_config_or_env(
    root: Context, llm: LlmService, clean_env: pytest.MonkeyPatch
) -> None:
    """plugin registration and config / defaults to the public base URL without config or env"""
    adapter = await load(root, apiKey=KEY)
    assert adapter.base_url == PUBLIC_BASE_URL == "https://api.deepseek.com"
    assert adapter.url == "https://api.deepseek.com/chat/completions"


async def test_adapter_is_constructible_directly_for_embedding(server: WireServer) -> None:
    """plugin registration and config / adapter is constructible directly for embedding"""
    server.add(text_reply("embedded"))
    async with DeepSeekAdapter(KEY, server.base_url, thinking="enabled", reasoning_effort="max") as adapter:
        assert isinstance(adapter, LlmAdapter)
        chunks = await collect(adapter.stream(options()))
    assert chunks[1] == TextDeltaChunk(index=0, text="embedded")
    assert server.requests[0].json["thinking"] == {"type": "enabled"}
    assert server.requests[0].json["reasoning_effort"] == "max"
    await server.wait_for_connections(0)  # leaving the block closed the adapter's own client


# ----------------------------------------------------------------------- beyond spec
async def test_loads_from_a_yaml_tree_by_module_path(
    root: Context, server: WireServer, clean_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """the real loader builds the plugin from the module namespace (name, inject, Config, apply)"""
    tree = tmp_path / "tree.yml"
    tree.write_text(
        "- id: llm\n  name: dsh.core.llm:LlmService\n"
        "- id: deepseek\n  name: dsh.adapters.deepseek\n"
        "  config:\n    apiKey: !env DEEPSEEK_API_KEY\n    baseURL: !env DEEPSEEK_BASE_URL\n    models: [tree-model]\n"
    )
    with pytest.raises(LoaderError, match="an API key is required"):
        await load_tree(root, tree)
    clean_env.setenv("DEEPSEEK_API_KEY", "sk-tree")
    clean_env.setenv("DEEPSEEK_BASE_URL", server.base_url)
    server.add(text_reply("from the tree"))
    await load_tree(root, tree)
    result = await root[LLM].generate(options("tree-model"))
    assert result.message.content == (text("from the tree"),)
    assert server.requests[0].headers["authorization"] == "Bearer sk-tree"


async def test_config_accepts_camel_and_snake_case_and_rejects_unknown_keys(
    root: Context, llm: LlmService, clean_env: pytest.MonkeyPatch
) -> None:
    """Config takes the YAML camelCase keys or their snake_case twins; typos fail the load"""
    camel = Config.model_validate({"apiKey": "a", "baseURL": "b", "reasoningEffort": "max", "thinking": "enabled"})
    snake = Config.model_validate({"api_key": "a", "base_url": "b", "reasoning_effort": "max", "thinking": "enabled"})
    assert camel == snake
    with pytest.raises(ConfigError, match="apikey"):
        await root.plugin(deepseek, {"apikey": KEY})
    with pytest.raises(ConfigError, match="thinking"):
        await root.plugin(deepseek, {"apiKey": KEY, "thinking": "sometimes"})
    assert llm.models() == []


async def test_a_refused_connection_raises_a_NETWORK_LlmError_naming_the_url() -> None:
    """a transport failure before any answer becomes LlmError NETWORK with the URL and the fix"""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with DeepSeekAdapter(KEY, f"http://127.0.0.1:{port}") as adapter:
        with pytest.raises(LlmError) as caught:
            await collect(adapter.stream(options()))
    assert caught.value.code == "NETWORK"
    assert f"http://127.0.0.1:{port}/chat/completions" in str(caught.value)
    assert isinstance(caught.value.__cause__, aiohttp.ClientConnectorError)


async def test_an_invalid_base_URL_raises_a_NETWORK_LlmError_naming_the_fix() -> None:
    """a base URL that cannot be parsed fails the call with the URL and where to fix it"""
    async with DeepSeekAdapter(KEY, "http://[::1") as adapter:
        with pytest.raises(LlmError) as caught:
            await collect(adapter.stream(options()))
    assert caught.value.code == "NETWORK"
    assert "'http://[::1/chat/completions' is invalid" in str(caught.value)
    assert "baseURL" in str(caught.value)
    assert isinstance(caught.value.__cause__, aiohttp.InvalidURL)


async def test_a_given_session_stays_open_and_a_closed_adapter_refuses_streams(server: WireServer) -> None:
    """an injected aiohttp session is the caller's to close; aclose() is idempotent and final"""
    server.add(text_reply("a"))
    async with aiohttp.ClientSession() as client:
        adapter = DeepSeekAdapter(KEY, server.base_url, session=client)
        assert kinds(await collect(adapter.stream(options())))[-1] == "finish"
        await adapter.aclose()
        await adapter.aclose()
        assert not client.closed
        with pytest.raises(LlmError, match="closed") as caught:
            await collect(adapter.stream(options()))
        assert caught.value.code == "CLOSED"
    never_used = DeepSeekAdapter(KEY)
    await never_used.aclose()


async def test_prefill_fails_before_any_request(server: WireServer) -> None:
    """an UNSUPPORTED option fails on first iteration without touching the network"""
    async with DeepSeekAdapter(KEY, server.base_url) as adapter:
        with pytest.raises(LlmError) as caught:
            await collect(adapter.stream(options(prefill=[])))
    assert caught.value.code == "UNSUPPORTED"
    assert server.requests == []
