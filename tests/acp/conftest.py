"""Fixtures of the ACP bridge tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from dsh.core.system_prompt import SystemPrompt
from dsh.core.tools import TOOLS, ToolRegistry
from dsh.kernel import Context


@pytest.fixture
async def tool_registry() -> AsyncIterator[ToolRegistry]:
    """A real tool registry (with its system-prompt dependency) on a fresh root."""
    ctx = Context()
    await ctx.plugin(SystemPrompt)
    await ctx.plugin(ToolRegistry)
    yield ctx[TOOLS]
    await ctx.dispose()
