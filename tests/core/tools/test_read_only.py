"""``ToolDefinition.read_only`` and ``fs_writes``: declared by every authoring path, False unless said."""

from __future__ import annotations

from pydantic import BaseModel

from dsh.core.tools import ToolExecution, define_model_tool, define_tool, tool_from_function


async def look(path: str) -> str:
    """Look at a path."""
    return path


class Args(BaseModel):
    path: str


async def body(args: object, execution: ToolExecution) -> str:
    return "x"


def test_every_authoring_path_declares_read_only() -> None:
    assert tool_from_function(look).read_only is False
    assert tool_from_function(look, read_only=True).read_only is True
    assert define_model_tool("m", "d", Args, body).read_only is False
    assert define_model_tool("m", "d", Args, body, read_only=True).read_only is True
    spec = {"path": {"type": "string"}}
    assert define_tool("t", "d", spec, body).read_only is False  # type: ignore[arg-type]
    assert define_tool("t", "d", spec, body, read_only=True).read_only is True  # type: ignore[arg-type]


def test_every_authoring_path_declares_fs_writes() -> None:
    assert tool_from_function(look).fs_writes is False
    assert tool_from_function(look, fs_writes=True).fs_writes is True
    assert define_model_tool("m", "d", Args, body, fs_writes=True).fs_writes is True
    spec = {"path": {"type": "string"}}
    assert define_tool("t", "d", spec, body, fs_writes=True).fs_writes is True  # type: ignore[arg-type]
