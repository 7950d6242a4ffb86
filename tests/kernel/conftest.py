"""Kernel tests end with no task left running on their event loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest


@pytest.fixture(autouse=True)
async def no_stray_tasks() -> AsyncIterator[None]:
    """Fail a test that leaves a task running (every task must have an owner that ends it)."""
    yield
    await asyncio.sleep(0)
    stray = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    assert stray == [], f"tasks still running after the test: {stray}"
