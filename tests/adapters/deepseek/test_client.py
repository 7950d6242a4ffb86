"""The adapter's own aiohttp session: created on the first stream, its TLS set up off the event loop.

Importing aiohttp and loading a CA bundle take tens of milliseconds each; the plugin starts
them in a worker thread (the CA bundle only for an ``https`` base URL) so they overlap the
rest of the boot.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import aiohttp
import pytest

import dsh.adapters.deepseek as deepseek
from dsh.adapters.deepseek import DeepSeekAdapter
from dsh.core.errors import LlmError
from dsh.core.llm import LlmService, text
from dsh.kernel import Context
from dsh.testing.wire import WireServer, text_reply
from tests.adapters.deepseek.helpers import collect, kinds, options

KEY = "sk-test"


def other_tasks() -> set[asyncio.Task[object]]:
    return {task for task in asyncio.all_tasks() if task is not asyncio.current_task()}


def closed_port() -> int:
    """A local port nothing listens on (a request there would be refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


async def test_the_plugin_streams_through_one_pooled_connection_and_imports_aiohttp_in_a_thread(
    root: Context, llm: LlmService, server: WireServer, clean_env: pytest.MonkeyPatch
) -> None:
    """an http base URL needs no TLS: loading only starts the aiohttp import; calls share one connection"""
    server.add(text_reply("first"), text_reply("again"))
    fiber = await root.plugin(deepseek, {"apiKey": KEY, "baseURL": server.base_url})
    assert len(other_tasks()) <= 1  # the aiohttp import in a worker thread (done at once when already imported)
    for word in ("first", "again"):
        result = await llm.generate(options())
        assert result.message.content == (text(word),)
    assert server.total_connections == 1
    await fiber.dispose()
    await server.wait_for_connections(0)
    assert other_tasks() == set()


async def test_an_https_base_URL_loads_the_CA_bundle_in_a_worker_thread(
    root: Context, llm: LlmService, clean_env: pytest.MonkeyPatch
) -> None:
    """loading llm-deepseek for https starts the TLS setup off the loop; unloading waits for it"""
    fiber = await root.plugin(deepseek, {"apiKey": KEY, "baseURL": f"https://127.0.0.1:{closed_port()}"})
    adapter = fiber.instance
    assert isinstance(adapter, DeepSeekAdapter)
    assert len(other_tasks()) == 1  # the TLS setup, running in a worker thread
    await fiber.dispose()
    assert other_tasks() == set()
    adapter.prepare()  # a closed adapter prepares nothing
    assert other_tasks() == set()
    with pytest.raises(LlmError) as caught:
        await collect(adapter.stream(options()))
    assert caught.value.code == "CLOSED"


async def test_prepare_is_idempotent_and_a_given_session_is_never_replaced_or_closed(server: WireServer) -> None:
    """prepare() starts one worker thread at most; a caller's session stays open"""
    owned = DeepSeekAdapter(KEY, f"https://127.0.0.1:{closed_port()}")
    owned.prepare()
    owned.prepare()
    assert len(other_tasks()) == 1
    await owned.aclose()
    assert other_tasks() == set()
    server.add(text_reply("given"))
    async with aiohttp.ClientSession() as client:
        async with DeepSeekAdapter(KEY, server.base_url, session=client) as given:
            given.prepare()
            given.prepare()
            assert len(other_tasks()) == 1  # the (already done) aiohttp import
            assert kinds(await collect(given.stream(options())))[-1] == "finish"
        assert not client.closed
    never_used = DeepSeekAdapter(KEY)
    await never_used.aclose()


@pytest.mark.parametrize("prepared", [True, False], ids=["set-up-in-a-thread", "set-up-on-first-use"])
async def test_a_CA_bundle_that_cannot_be_loaded_fails_calls_with_NETWORK_naming_the_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, prepared: bool
) -> None:
    """a bad SSL_CERT_FILE fails each https call with LlmError NETWORK naming it; closing still works"""
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "no-such-bundle.pem"))
    base_url = f"https://127.0.0.1:{closed_port()}"
    adapter = DeepSeekAdapter(KEY, base_url)
    if prepared:
        adapter.prepare()
    for _ in range(2):
        with pytest.raises(LlmError) as caught:
            await collect(adapter.stream(options()))
        assert caught.value.code == "NETWORK"
        assert "SSL_CERT_FILE" in str(caught.value)
        assert f"{base_url}/chat/completions" in str(caught.value)
        assert isinstance(caught.value.__cause__, FileNotFoundError)
    await adapter.aclose()
    assert other_tasks() == set()
