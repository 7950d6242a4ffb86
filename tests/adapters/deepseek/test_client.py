"""The adapter's own HTTP client: built off the event loop when the plugin loads, or on first use.

Building an ``httpx.AsyncClient`` loads the CA bundle (tens of milliseconds); the plugin
starts that in a worker thread so it overlaps the rest of the boot.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

import dsh.adapters.deepseek as deepseek
from dsh.adapters.deepseek import DeepSeekAdapter
from dsh.core.errors import LlmError
from dsh.core.llm import LlmService
from dsh.kernel import Context
from dsh.testing.wire import WireServer, text_reply
from tests.adapters.deepseek.helpers import collect, kinds, options

KEY = "sk-test"


def other_tasks() -> set[asyncio.Task[object]]:
    return {task for task in asyncio.all_tasks() if task is not asyncio.current_task()}


async def test_the_plugin_builds_the_client_in_a_worker_thread_and_streams_through_it(
    root: Context, llm: LlmService, server: WireServer, clean_env: pytest.MonkeyPatch
) -> None:
    """loading llm-deepseek starts the client build off the loop; the first call uses that client"""
    server.add(text_reply("prepared"), text_reply("again"))
    fiber = await root.plugin(deepseek, {"apiKey": KEY, "baseURL": server.base_url})
    assert len(other_tasks()) == 1  # the build, running in a worker thread
    for word in ("prepared", "again"):
        result = await llm.generate(options())
        assert result.message["content"] == [{"type": "text", "text": word}]
    assert server.total_connections == 1
    await fiber.dispose()
    await server.wait_for_connections(0)
    assert other_tasks() == set()


async def test_unloading_before_any_call_waits_for_the_build_and_closes_the_client(
    root: Context, llm: LlmService, clean_env: pytest.MonkeyPatch
) -> None:
    """a plugin unloaded right after loading leaves no task and no client behind"""
    fiber = await root.plugin(deepseek, {"apiKey": KEY})
    adapter = fiber.instance
    assert isinstance(adapter, DeepSeekAdapter)
    await fiber.dispose()
    assert other_tasks() == set()
    adapter.prepare()  # a closed adapter builds nothing
    assert other_tasks() == set()
    with pytest.raises(LlmError) as caught:
        await collect(adapter.stream(options()))
    assert caught.value.code == "CLOSED"


async def test_prepare_is_idempotent_and_a_given_client_is_never_replaced(server: WireServer) -> None:
    """prepare() starts one build at most, and none for a caller's client"""
    owned = DeepSeekAdapter(KEY, server.base_url)
    owned.prepare()
    owned.prepare()
    assert len(other_tasks()) == 1
    await owned.aclose()
    assert other_tasks() == set()
    server.add(text_reply("given"))
    async with httpx.AsyncClient() as client:
        async with DeepSeekAdapter(KEY, server.base_url, client=client) as given:
            given.prepare()
            assert other_tasks() == set()
            assert kinds(await collect(given.stream(options())))[-1] == "finish"
        assert not client.is_closed


async def test_a_stream_started_while_the_adapter_closes_during_the_build_is_refused(server: WireServer) -> None:
    """closing the adapter while a first call waits for the client makes that call fail CLOSED"""
    adapter = DeepSeekAdapter(KEY, server.base_url)
    adapter.prepare()
    pending = asyncio.ensure_future(collect(adapter.stream(options())))
    await asyncio.sleep(0)  # the call is now waiting for the client being built
    await adapter.aclose()
    with pytest.raises(LlmError) as caught:
        await pending
    assert caught.value.code == "CLOSED"
    assert server.requests == []


@pytest.mark.parametrize("prepared", [True, False], ids=["built-in-a-thread", "built-on-first-use"])
async def test_a_client_that_cannot_load_its_CA_bundle_fails_calls_with_NETWORK_naming_the_fix(
    server: WireServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, prepared: bool
) -> None:
    """a bad SSL_CERT_FILE fails each call with LlmError NETWORK naming it; closing still works"""
    missing = tmp_path / "no-such-bundle.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(missing))
    adapter = DeepSeekAdapter(KEY, server.base_url)
    if prepared:
        adapter.prepare()
    for _ in range(2):
        with pytest.raises(LlmError) as caught:
            await collect(adapter.stream(options()))
        assert caught.value.code == "NETWORK"
        assert "SSL_CERT_FILE" in str(caught.value)
        assert f"{server.base_url}/chat/completions" in str(caught.value)
        assert isinstance(caught.value.__cause__, OSError)
    await adapter.aclose()
    assert server.requests == []
    assert other_tasks() == set()
