"""MCP tool results as dsh content blocks.

Text stays text; an image becomes an :class:`~dsh.core.llm.ImageBlock` whose URL is a
``data:`` URL of its base64 payload; an embedded text resource becomes its text. What
the model cannot take as it is (audio, a binary resource, a resource link) becomes a
short text naming it, so nothing disappears without a trace. An ``isError`` result
is raised as :class:`McpToolError`, which the tool registry turns into an error
result (``Error: <the result's text>``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from dsh.core.errors import HarnessError
from dsh.core.llm import ContentBlock, ImageBlock, TextBlock

if TYPE_CHECKING:
    import mcp_types


class McpToolError(HarnessError):
    """A tool call the MCP server answered with ``isError`` (code ``MCP_TOOL_ERROR``)."""

    def __init__(self, message: str) -> None:
        super().__init__(message or "the MCP tool reported an error without a message", "MCP_TOOL_ERROR")


def content_block(block: mcp_types.ContentBlock) -> ContentBlock:
    """One MCP content block as a dsh block (see the module docstring)."""
    import mcp_types

    if isinstance(block, mcp_types.TextContent):
        return TextBlock(text=block.text)
    if isinstance(block, mcp_types.ImageContent):
        return ImageBlock(url=f"data:{block.mime_type};base64,{block.data}", mime_type=block.mime_type)
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            return TextBlock(text=resource.text)
        kind = resource.mime_type or "binary data"
        return TextBlock(text=f"[resource {resource.uri} ({kind}, {len(resource.blob)} base64 characters) not shown]")
    if isinstance(block, mcp_types.ResourceLink):
        return TextBlock(text=f"[resource link: {block.name} {block.uri}]")
    return TextBlock(text=f"[audio ({block.mime_type}) not shown]")  # the one kind left: AudioContent


def result_content(result: mcp_types.CallToolResult) -> tuple[ContentBlock, ...]:
    """A call's content as dsh blocks; raises :class:`McpToolError` for an ``isError`` result.

    A result with no content but ``structuredContent`` shows that as compact JSON.
    """
    blocks = tuple(content_block(block) for block in result.content)
    if not blocks and result.structured_content is not None:
        blocks = (TextBlock(text=json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))),)
    if result.is_error:
        raise McpToolError("\n".join(block.text for block in blocks if type(block) is TextBlock))
    return blocks
