"""Fixtures of the coding-agent tests: a local wire server standing in for DeepSeek."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from dsh.testing.wire import WireServer


@pytest.fixture
async def wire() -> AsyncIterator[WireServer]:
    async with WireServer() as server:
        yield server
