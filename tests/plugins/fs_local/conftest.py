"""Fixtures for the fs-local tests: a workspace directory and a loaded filesystem."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from dsh.core.fs import FS, FileSystem, Workspace
from dsh.kernel import Context
from dsh.plugins.fs_local import LocalFileSystem


@dataclass
class Local:
    ctx: Context
    fs: FileSystem
    ws: Workspace
    root: Path


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[Local]:
    root = tmp_path / "ws"
    root.mkdir()
    extra = tmp_path / "extra"
    extra.mkdir()
    ctx = Context()
    await ctx.plugin(LocalFileSystem, {"root": str(root), "extraDirs": [str(extra)]})
    fs = ctx[FS]
    yield Local(ctx=ctx, fs=fs, ws=fs.workspace(), root=root)
    await ctx.dispose()
