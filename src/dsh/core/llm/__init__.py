"""The provider-neutral model vocabulary and the ``llm`` service (SPEC §2).

* :mod:`.types`: content blocks, messages, stream chunks, usage, finish reasons,
  ``GenerateOptions`` / ``GenerateResult``;
* :class:`BlockAssembler`: the one algorithm that folds chunks into blocks;
* :class:`LlmService` under :data:`LLM`, and the :class:`LlmAdapter` seam;
* the ``llm/*`` event catalog: :data:`LLM_STREAM`, :data:`LLM_GENERATE`,
  :data:`LLM_ADAPTER_CHANGE`;
* ``parse_*``: validation of untrusted JSON into the vocabulary (imported from
  :mod:`.validate` on first access, so a process that never validates skips it).
"""

from typing import TYPE_CHECKING, Any

from dsh.core.llm.assembler import BlockAssembler
from dsh.core.llm.events import LLM_ADAPTER_CHANGE, LLM_GENERATE, LLM_STREAM
from dsh.core.llm.service import LLM, LlmAdapter, LlmService
from dsh.core.llm.types import (
    AbortedFinish,
    AgentSource,
    BlockEndChunk,
    BlockStartChunk,
    CallId,
    ContentBlock,
    ErrorFinish,
    FinishChunk,
    FinishReason,
    GenerateOptions,
    GenerateResult,
    ImageBlock,
    MaxTokensFinish,
    Message,
    MessageSource,
    PluginSource,
    ReasoningBlock,
    ReasoningDeltaChunk,
    Role,
    StopFinish,
    StreamChunk,
    TextBlock,
    TextDeltaChunk,
    TokenUsage,
    ToolCallBlock,
    ToolCallDeltaChunk,
    ToolCallsFinish,
    ToolResultBlock,
    ToolSchema,
    UsageChunk,
    UserSource,
    text,
    text_of,
)

if TYPE_CHECKING:
    from dsh.core.llm.validate import (
        parse_content_block,
        parse_finish_reason,
        parse_message,
        parse_stream_chunk,
        parse_token_usage,
    )

_VALIDATORS = frozenset(
    {"parse_content_block", "parse_finish_reason", "parse_message", "parse_stream_chunk", "parse_token_usage"}
)


def __getattr__(name: str) -> Any:
    """The ``parse_*`` validators, imported on first use (they bring pydantic shapes a turn never needs)."""
    if name in _VALIDATORS:
        from dsh.core.llm import validate

        value = getattr(validate, name)
        globals()[name] = value  # later lookups find it without this hook
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LLM",
    "LLM_ADAPTER_CHANGE",
    "LLM_GENERATE",
    "LLM_STREAM",
    "AbortedFinish",
    "AgentSource",
    "BlockAssembler",
    "BlockEndChunk",
    "BlockStartChunk",
    "CallId",
    "ContentBlock",
    "ErrorFinish",
    "FinishChunk",
    "FinishReason",
    "GenerateOptions",
    "GenerateResult",
    "ImageBlock",
    "LlmAdapter",
    "LlmService",
    "MaxTokensFinish",
    "Message",
    "MessageSource",
    "PluginSource",
    "ReasoningBlock",
    "ReasoningDeltaChunk",
    "Role",
    "StopFinish",
    "StreamChunk",
    "TextBlock",
    "TextDeltaChunk",
    "TokenUsage",
    "ToolCallBlock",
    "ToolCallDeltaChunk",
    "ToolCallsFinish",
    "ToolResultBlock",
    "ToolSchema",
    "UsageChunk",
    "UserSource",
    "parse_content_block",
    "parse_finish_reason",
    "parse_message",
    "parse_stream_chunk",
    "parse_token_usage",
    "text",
    "text_of",
]
