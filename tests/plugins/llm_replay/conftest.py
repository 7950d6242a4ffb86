"""Fixtures: a real root context with the real ``llm`` service loaded."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from dsh.core.llm import LLM, LlmService
from dsh.kernel import Context


@pytest.fixture
async def root() -> AsyncIterator[Context]:
    ctx = Context()
    yield ctx
    await ctx.dispose()


@pytest.fixture
async def llm(root: Context) -> LlmService:
    await root.plugin(LlmService)
    return root[LLM]
