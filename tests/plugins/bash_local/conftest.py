"""Fixtures for the bash-local tests: a real root context and a loader for the executor."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from dsh.core.bash import BASH
from dsh.kernel import Context, Fiber, unwrap
from dsh.plugins.bash_local import LocalBashExecutor
from tests.plugins.bash_local.helpers import Handshake, LoadExecutor


@pytest.fixture
async def root() -> AsyncIterator[Context]:
    ctx = Context()
    yield ctx
    await ctx.dispose()


@pytest.fixture
def load(root: Context, tmp_path: Path) -> LoadExecutor:
    """Load ``bash-local`` with ``config``; spills go to a per-test dir, the grace is short."""

    async def loader(config: dict[str, Any] | None = None, grace_ms: float = 200) -> tuple[LocalBashExecutor, Fiber]:
        fiber = await root.plugin(LocalBashExecutor, config)
        executor = unwrap(root[BASH])
        assert isinstance(executor, LocalBashExecutor)
        spill = tmp_path / "spill"
        spill.mkdir(exist_ok=True)
        executor.internals.spill_dir = str(spill)
        executor.internals.grace_ms = grace_ms
        return executor, fiber

    return loader


@pytest.fixture
async def handshake() -> AsyncIterator[Handshake]:
    shake = await Handshake().start()
    yield shake
    await shake.close()
