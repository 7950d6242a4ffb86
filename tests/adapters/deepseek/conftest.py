"""Fixtures for the DeepSeek adapter tests: a real kernel with the real LlmService, a wire server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from dsh.core.llm import LLM, LlmService
from dsh.kernel import Context
from dsh.testing.wire import WireServer


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No DeepSeek variables from the developer's shell leak into a test."""
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    monkeypatch.delenv("DEEPSEEK_BASE_URL", raising=False)
    return monkeypatch


@pytest.fixture
async def root() -> AsyncIterator[Context]:
    ctx = Context()
    yield ctx
    await ctx.dispose()


@pytest.fixture
async def llm(root: Context) -> LlmService:
    await root.plugin(LlmService)
    return root[LLM]


@pytest.fixture
async def server() -> AsyncIterator[WireServer]:
    """A started wire server with an empty script (tests ``add`` their entries)."""
    async with WireServer() as wire:
        yield wire
