"""Fixtures for the MCP client tests: the test server over stdio, and one HTTP server per worker."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.plugins.mcp_client.helpers import SERVER


@pytest.fixture
def state(tmp_path: Path) -> Path:
    path = tmp_path / "state"
    path.mkdir()
    return path


def _serve(tmp_path_factory: pytest.TempPathFactory, transport: str) -> Iterator[int]:
    """Run the test server over ``transport`` (``http`` or ``sse``) on 127.0.0.1; yield its port."""
    state = tmp_path_factory.mktemp(f"{transport}-state")
    process = subprocess.Popen(
        [sys.executable, str(SERVER), transport],
        stdout=subprocess.PIPE,
        env={"MCP_TEST_STATE": str(state), "PATH": "/usr/bin:/bin"},
        text=True,
    )
    try:
        assert process.stdout is not None
        yield int(process.stdout.readline())
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a server that ignores SIGTERM
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


@pytest.fixture(scope="session")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a streamable HTTP test server on 127.0.0.1, one per test worker."""
    for port in _serve(tmp_path_factory, "http"):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="session")
def sse_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of an HTTP+SSE test server on 127.0.0.1, one per test worker."""
    for port in _serve(tmp_path_factory, "sse"):
        yield f"http://127.0.0.1:{port}/sse"
