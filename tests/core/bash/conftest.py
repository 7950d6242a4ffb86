"""Fixtures for the bash seam tests: a real root context with the stub executor loaded."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from dsh.core.bash import BASH, BashExecutor
from dsh.kernel import Context, Fiber
from tests.core.bash.helpers import StubExecutor


@pytest.fixture
async def root() -> AsyncIterator[Context]:
    ctx = Context()
    yield ctx
    await ctx.dispose()


@pytest.fixture
async def stub_fiber(root: Context) -> Fiber:
    return await root.plugin(StubExecutor)


@pytest.fixture
def bash(root: Context, stub_fiber: Fiber) -> BashExecutor:
    return root[BASH]
