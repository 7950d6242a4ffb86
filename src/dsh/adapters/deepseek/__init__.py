"""DeepSeek chat-completions over aiohttp and hand-parsed SSE (SPEC §10).

This package is the ``llm-deepseek`` plugin (``name``, ``inject``, ``Config``,
``apply``): load it with ``ctx.plugin(dsh.adapters.deepseek, {...})`` or by its module
path in YAML. Its parts are public for embedding and tests:

* :class:`DeepSeekAdapter` -- the :class:`~dsh.core.llm.LlmAdapter`;
* :func:`serialize_request`, :func:`serialize_messages`, :func:`serialize_message` -- options
  to the request body (frozen ``msgspec`` structs); :func:`encode_request` -- that body as bytes;
* :class:`SseParser`, :func:`parse_sse` -- response bytes to event payloads;
* :class:`StreamTranslator`, :func:`translate`, :func:`map_finish_reason`,
  :func:`map_usage` -- payloads to chunks.
"""

from dsh.adapters.deepseek.adapter import (
    DEFAULT_MODELS,
    DRAIN_TIMEOUT,
    PUBLIC_BASE_URL,
    USER_AGENT,
    DeepSeekAdapter,
    http_error_code,
)
from dsh.adapters.deepseek.plugin import API_KEY_ENV, BASE_URL_ENV, Config, apply, inject, name
from dsh.adapters.deepseek.serialize import (
    EMPTY_TOOL_RESULT,
    ChatRequest,
    ReasoningEffort,
    RequestDefaults,
    Thinking,
    WireMessage,
    WireTool,
    encode_request,
    serialize_message,
    serialize_messages,
    serialize_request,
)
from dsh.adapters.deepseek.sse import DONE, SseParser, parse_sse
from dsh.adapters.deepseek.translate import StreamTranslator, map_finish_reason, map_usage, translate
from dsh.adapters.deepseek.transport import CONNECT_TIMEOUT, READ_TIMEOUT

__all__ = [
    "API_KEY_ENV",
    "BASE_URL_ENV",
    "CONNECT_TIMEOUT",
    "DEFAULT_MODELS",
    "DONE",
    "DRAIN_TIMEOUT",
    "EMPTY_TOOL_RESULT",
    "PUBLIC_BASE_URL",
    "READ_TIMEOUT",
    "USER_AGENT",
    "ChatRequest",
    "Config",
    "DeepSeekAdapter",
    "ReasoningEffort",
    "RequestDefaults",
    "SseParser",
    "StreamTranslator",
    "Thinking",
    "WireMessage",
    "WireTool",
    "apply",
    "encode_request",
    "http_error_code",
    "inject",
    "map_finish_reason",
    "map_usage",
    "name",
    "parse_sse",
    "serialize_message",
    "serialize_messages",
    "serialize_request",
    "translate",
]
