"""Fixtures for the tool-bash tests: a real root context, a booted stack, a TCP handshake."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from dsh.kernel import Context
from tests.plugins.bash_local.helpers import Handshake
from tests.plugins.tool_bash.helpers import Stack, boot


@pytest.fixture
async def root() -> AsyncIterator[Context]:
    ctx = Context()
    yield ctx
    await ctx.dispose()


@pytest.fixture
async def stack(root: Context, tmp_path: Path) -> Stack:
    spill = tmp_path / "spill"
    spill.mkdir()
    return await boot(root, spill_dir=str(spill))


@pytest.fixture
async def handshake() -> AsyncIterator[Handshake]:
    shake = await Handshake().start()
    yield shake
    await shake.close()
