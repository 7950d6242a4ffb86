"""The ``llm-openai`` plugin: registration, config and env fallbacks, the SDK client (SPEC §11).

``buildModel`` titles test pi-ai's model descriptor; their SDK-route equivalents test
the ``openai.AsyncOpenAI`` client the adapter builds for the configured endpoint.
"""

from __future__ import annotations

import openai
import pytest

import dsh.adapters.openai as llm_openai
from dsh.adapters.openai import DEFAULT_MODELS, PUBLIC_BASE_URL, Config, OpenAIAdapter
from dsh.core.errors import LlmError
from dsh.core.llm import (
    LLM_ADAPTER_CHANGE,
    AbortedFinish,
    BlockStartChunk,
    FinishChunk,
    LlmService,
    TextDeltaChunk,
    parse_message,
    text,
)
from dsh.kernel import AbortController, ConfigError, Context, FiberState
from dsh.testing.wire import Reply, TextDelta, WireServer, text_reply
from tests.adapters.openai.helpers import KEY, collect, options


async def load(root: Context, **config: object) -> OpenAIAdapter:
    fiber = await root.plugin(llm_openai, config)
    adapter = fiber.instance
    assert isinstance(adapter, OpenAIAdapter)
    return adapter


# ------------------------------------------------------------- PiAiAdapter against a mock server
async def test_registers_unregisters_models_on_the_llm_service_HMR_safety(
    root: Context, llm: LlmService, server: WireServer, clean_env: pytest.MonkeyPatch
) -> None:
    """PiAiAdapter against a mock server / registers/unregisters models on the llm service (HMR safety)"""
    server.add(text_reply("pooled"))
    fiber = await root.plugin(llm_openai, {"apiKey": KEY, "baseURL": server.base_url, "models": ["m-a", "m-b"]})
    assert llm.models() == ["m-a", "m-b"]
    assert (llm_openai.name, llm_openai.inject) == ("llm-openai", ["llm"])
    await llm.generate(options("m-b"))
    assert server.open_connections == 1  # kept alive in the SDK client's pool
    await fiber.dispose()
    assert llm.models() == []
    await server.wait_for_connections(0)  # unloading closed the SDK client
    adapter = fiber.instance
    with pytest.raises(LlmError) as caught:
        await collect(adapter.stream(options("m-a")))
    assert caught.value.code == "CLOSED"
    assert "reload llm-openai" in str(caught.value)
    again = await root.plugin(llm_openai, {"apiKey": KEY, "models": ["m-a", "m-b"]})
    assert llm.models() == ["m-a", "m-b"]
    await again.dispose()
    assert llm.models() == []


async def test_a_throwing_adapter_change_listener_rolls_the_registration_back(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """a throwing llm/adapter-change listener fails the load, leaves no model behind and the names reusable"""
    calls: list[str] = []

    def refuse() -> None:
        calls.append("change")
        raise RuntimeError("listener refuses")

    listener = root.on(LLM_ADAPTER_CHANGE, refuse)
    with pytest.raises(RuntimeError, match="listener refuses"):
        await root.plugin(llm_openai, {"apiKey": KEY, "baseURL": server.base_url, "models": ["m"]})
    assert llm.models() == []
    assert calls == ["change", "change"]  # the registration, then its rollback
    listener()
    server.add(text_reply("reused"))
    fiber = await root.plugin(llm_openai, {"apiKey": KEY, "baseURL": server.base_url, "models": ["m"]})
    assert (await llm.generate(options("m"))).message.content == (text("reused"),)
    await fiber.dispose()
    assert llm.models() == []


async def test_a_model_served_elsewhere_fails_the_load_with_DUPLICATE_ADAPTER(root: Context, llm: LlmService) -> None:
    """registering a model another adapter serves fails the load and registers none of its models"""
    first = await root.plugin(llm_openai, {"apiKey": KEY, "models": ["shared"]})
    with pytest.raises(LlmError) as caught:
        await root.plugin(llm_openai, {"apiKey": KEY, "models": ["mine", "shared"]})
    assert caught.value.code == "DUPLICATE_ADAPTER"
    assert llm.models() == ["shared"]
    assert first.state is FiberState.ACTIVE


async def test_throws_a_clear_error_when_no_API_key_is_available(
    root: Context, llm: LlmService, clean_env: pytest.MonkeyPatch
) -> None:
    """PiAiAdapter against a mock server / throws a clear error when no API key is available"""
    with pytest.raises(LlmError, match="an API key is required") as caught:
        await root.plugin(llm_openai, {})
    assert str(caught.value) == "llm-openai: an API key is required (Config.apiKey or $DEEPSEEK_API_KEY)"
    assert caught.value.code == "NO_API_KEY"
    assert llm.models() == []
    clean_env.setenv("DEEPSEEK_API_KEY", "sk-from-env")
    with pytest.raises(LlmError, match="an API key is required"):
        await root.plugin(llm_openai, {"apiKey": ""})  # explicit empty key: no fallback to the env
    assert llm.models() == []


async def test_rejects_unknown_config_keys_and_reasoning_values(root: Context, llm: LlmService) -> None:
    """config validation names the bad fields before anything is registered"""
    with pytest.raises(ConfigError) as caught:
        await root.plugin(llm_openai, {"apiKey": KEY, "reasoning": "max", "thinking": "enabled"})
    message = str(caught.value)
    assert "reasoning" in message
    assert "thinking" in message
    assert llm.models() == []
    assert Config.model_validate({"api_key": "k", "base_url": "u"}).base_url == "u"  # snake_case spellings too


# ------------------------------------------------------------------ option spreads and env fallbacks
async def test_forwards_temperature_maxTokens_and_signal(root: Context, llm: LlmService, server: WireServer) -> None:
    """option spreads and env fallbacks / forwards temperature, maxTokens, and signal"""
    server.add(text_reply("a"), Reply([TextDelta("partial")], ending="stall"))
    await load(root, apiKey=KEY, baseURL=server.base_url)
    controller = AbortController()
    await llm.generate(options(temperature=0.25, max_tokens=128, signal=controller.signal))
    body = server.requests[0].json
    assert (body["temperature"], body["max_tokens"]) == (0.25, 128)
    stream = llm.stream(options(signal=controller.signal))
    assert type(await anext(stream)) is BlockStartChunk
    controller.abort("stop")
    rest = await collect(stream)
    assert rest[-1] == FinishChunk(reason=AbortedFinish())


async def test_falls_back_to_DEEPSEEK_API_KEY_DEEPSEEK_BASE_URL_env_vars(
    root: Context, llm: LlmService, server: WireServer, clean_env: pytest.MonkeyPatch
) -> None:
    """option spreads and env fallbacks / falls back to DEEPSEEK_API_KEY / DEEPSEEK_BASE_URL env vars"""
    clean_env.setenv("DEEPSEEK_API_KEY", "sk-from-env")
    clean_env.setenv("DEEPSEEK_BASE_URL", server.base_url)
    server.add(text_reply("env"))
    adapter = await load(root)
    assert adapter.base_url == server.base_url
    await llm.generate(options())
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env"


async def test_reads_the_variables_apiKeyEnv_and_baseURLEnv_name(
    root: Context, llm: LlmService, server: WireServer, clean_env: pytest.MonkeyPatch
) -> None:
    """`dsh --provider openai` points the plugin at OPENAI_API_KEY / OPENAI_BASE_URL this way."""
    clean_env.setenv("DEEPSEEK_API_KEY", "sk-deepseek")
    clean_env.setenv("OPENAI_API_KEY", "sk-openai")
    clean_env.setenv("OPENAI_BASE_URL", server.base_url)
    server.add(text_reply("env"))
    adapter = await load(root, apiKeyEnv="OPENAI_API_KEY", baseURLEnv="OPENAI_BASE_URL")
    assert adapter.base_url == server.base_url
    await llm.generate(options())
    assert server.requests[0].headers["authorization"] == "Bearer sk-openai"
    clean_env.delenv("OPENAI_API_KEY")
    with pytest.raises(LlmError, match=r"\$OPENAI_API_KEY"):
        await root.plugin(llm_openai, {"apiKeyEnv": "OPENAI_API_KEY", "models": ["other"]})


async def test_prefers_explicit_config_over_env_for_key_and_base_URL(
    root: Context, llm: LlmService, server: WireServer, clean_env: pytest.MonkeyPatch
) -> None:
    """explicit apiKey and baseURL win over the environment"""
    clean_env.setenv("DEEPSEEK_API_KEY", "sk-from-env")
    clean_env.setenv("DEEPSEEK_BASE_URL", "http://127.0.0.1:9")
    server.add(text_reply("cfg"))
    adapter = await load(root, apiKey="sk-from-config", baseURL=server.base_url)
    assert adapter.base_url == server.base_url
    await llm.generate(options())
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-config"


async def test_defaults_to_the_public_base_URL_without_config_or_env(
    root: Context, llm: LlmService, clean_env: pytest.MonkeyPatch
) -> None:
    """option spreads and env fallbacks / defaults to the public base URL without config or env"""
    clean_env.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9")  # the SDK's own variable never applies
    adapter = await load(root, apiKey=KEY)
    assert adapter.base_url == PUBLIC_BASE_URL == "https://api.deepseek.com"
    assert str(adapter.client.base_url).rstrip("/") == "https://api.deepseek.com"


async def test_defaults_the_model_list(root: Context, llm: LlmService, clean_env: pytest.MonkeyPatch) -> None:
    """the default models are deepseek-v4-flash and deepseek-v4-pro"""
    adapter = await load(root, apiKey=KEY)
    assert llm.models() == ["deepseek-v4-flash", "deepseek-v4-pro"] == list(DEFAULT_MODELS)
    assert adapter.models == DEFAULT_MODELS
    assert adapter.reasoning is None


# ------------------------------------------------------------------------------ buildModel
async def test_builds_a_DeepSeek_compat_openai_completions_model_descriptor(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """buildModel / builds a DeepSeek-compat openai-completions model descriptor

    Equivalent: one SDK client for the configured endpoint and key, retries off.
    """
    adapter = await load(root, apiKey=KEY, baseURL=server.base_url, reasoning="high")
    client = adapter.client
    assert isinstance(client, openai.AsyncOpenAI)
    assert str(client.base_url).rstrip("/") == server.base_url
    assert client.api_key == KEY
    assert client.max_retries == 0
    assert adapter.client is client  # one client per adapter
    assert adapter.reasoning == "high"


async def test_keeps_reasoning_true_even_for_off_pi_ai_gates_the_thinking_field_on_it(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """buildModel / keeps reasoning true even for off (pi-ai gates the thinking field on it)

    Equivalent: ``off`` still sends the thinking field (disabled) rather than leaving it out.
    """
    server.add(text_reply("a"))
    await load(root, apiKey=KEY, baseURL=server.base_url, reasoning="off")
    await llm.generate(options())
    assert server.requests[0].json["thinking"] == {"type": "disabled"}


async def test_adapter_is_constructible_directly_for_embedding(server: WireServer) -> None:
    """buildModel / adapter is constructible directly for embedding"""
    server.add(text_reply("direct"))
    async with OpenAIAdapter(KEY, server.base_url, models=["x"], reasoning="xhigh") as adapter:
        assert adapter.models == ("x",)
        chunks = await collect(adapter.stream(options("x")))
        assert chunks[1] == TextDeltaChunk(index=0, text="direct")
        assert server.requests[0].json["reasoning_effort"] == "max"
    with pytest.raises(LlmError) as caught:
        await collect(adapter.stream(options("x")))
    assert caught.value.code == "CLOSED"
    await adapter.aclose()  # idempotent
    never_used = OpenAIAdapter(KEY)
    assert never_used.base_url == PUBLIC_BASE_URL
    await never_used.aclose()


async def test_a_given_SDK_client_is_used_and_left_open(server: WireServer) -> None:
    """an embedder's own AsyncOpenAI client serves the calls and stays the embedder's to close"""
    server.add(text_reply("one"), text_reply("two"))
    async with openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-own", max_retries=0) as client:
        adapter = OpenAIAdapter("ignored", "http://127.0.0.1:9", client=client)
        await collect(adapter.stream(options()))
        await adapter.aclose()
        assert not client.is_closed()
        again = OpenAIAdapter("ignored", client=client)
        assert (await collect(again.stream(options())))[1] == TextDeltaChunk(index=0, text="two")
    assert server.requests[0].headers["authorization"] == "Bearer sk-own"


# ------------------------------------------------------------------------------- review fixes
async def test_defaults_omitted_reasoning_config_to_thinking_ENABLED_provider_default(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """review fixes / defaults omitted reasoning config to thinking ENABLED (provider default)"""
    server.add(text_reply("a"))
    await load(root, apiKey=KEY, baseURL=server.base_url)
    await llm.generate(options())
    body = server.requests[0].json
    assert body["thinking"] == {"type": "enabled"}
    assert "reasoning_effort" not in body


async def test_replays_reasoning_content_on_assistant_tool_call_turns_passback_rule(
    root: Context, llm: LlmService, server: WireServer
) -> None:
    """review fixes / replays reasoning_content on assistant tool-call turns (passback rule)"""
    server.add(text_reply("done"))
    await load(root, apiKey=KEY, baseURL=server.base_url)
    history = [
        parse_message(message)
        for message in [
            {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "reasoning", "text": "I should call the tool."},
                    {"type": "tool-call", "id": "call_1", "name": "weather", "arguments": '{"city":"Paris"}'},
                ],
            },
            {"role": "user", "content": [{"type": "tool-result", "toolCallId": "call_1", "content": []}]},
            {
                "role": "assistant",
                "content": [{"type": "reasoning", "text": "not replayed"}, {"type": "text", "text": "Sunny."}],
            },
        ]
    ]
    await llm.generate(options(messages=history))
    messages = server.requests[0].json["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": "",
        "reasoning_content": "I should call the tool.",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city":"Paris"}'}}
        ],
    }
    assert messages[2] == {"role": "tool", "tool_call_id": "call_1", "content": "(no output)"}
    assert messages[3] == {"role": "assistant", "content": "Sunny."}
