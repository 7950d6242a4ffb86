"""Any OpenAI-compatible chat-completions endpoint through the official ``openai`` SDK.

This package is the ``llm-openai`` plugin (``name``, ``inject``, ``Config``, ``apply``):
load it with ``ctx.plugin(dsh.adapters.openai, {...})`` or by its module path in YAML.
It is the twin of ``llm-deepseek``, built independently on the SDK, and reports
provider failures in band (``finish {"kind": "error"}``) instead of raising. Its
parts are public for embedding and tests:

* :class:`OpenAIAdapter` -- the :class:`~dsh.core.llm.LlmAdapter`;
* :func:`build_request`, :func:`to_chat_messages`, :func:`to_chat_tool`,
  :func:`reasoning_fields` -- options to the SDK call;
* :class:`ChunkTranslator`, :func:`map_finish_reason`, :func:`map_usage` -- SDK chunks
  to stream chunks;
* :func:`request_failure`, :func:`stream_failure`, :func:`status_error_code` -- SDK
  exceptions to error finishes.
"""

from dsh.adapters.openai.adapter import DEFAULT_MODELS, DEFAULT_TIMEOUT, PUBLIC_BASE_URL, OpenAIAdapter
from dsh.adapters.openai.failure import other_failure, request_failure, status_error_code, stream_failure
from dsh.adapters.openai.plugin import API_KEY_ENV, BASE_URL_ENV, Config, apply, inject, name
from dsh.adapters.openai.request import (
    EMPTY_TOOL_RESULT,
    ChatMessage,
    ChatRequest,
    Reasoning,
    build_request,
    reasoning_fields,
    to_chat_messages,
    to_chat_tool,
)
from dsh.adapters.openai.translate import STREAM_CLOSED, ChunkTranslator, map_finish_reason, map_usage

__all__ = [
    "API_KEY_ENV",
    "BASE_URL_ENV",
    "DEFAULT_MODELS",
    "DEFAULT_TIMEOUT",
    "EMPTY_TOOL_RESULT",
    "PUBLIC_BASE_URL",
    "STREAM_CLOSED",
    "ChatMessage",
    "ChatRequest",
    "ChunkTranslator",
    "Config",
    "OpenAIAdapter",
    "Reasoning",
    "apply",
    "build_request",
    "inject",
    "map_finish_reason",
    "map_usage",
    "name",
    "other_failure",
    "reasoning_fields",
    "request_failure",
    "status_error_code",
    "stream_failure",
    "to_chat_messages",
    "to_chat_tool",
]
