"""Checking untrusted JSON against the llm vocabulary, at the edges (SPEC §2.1-2.2).

Data read from a file, a socket or a provider is plain decoded JSON until one of the
``parse_*`` functions has vouched for it. Each returns the value it was given, unchanged
and uncopied (key order kept), once it matches; otherwise it raises
``HarnessError(code="MALFORMED")`` whose message lists every offending path.

Rules, in the spirit of SPEC §0:

* validation is strict: no coercion (``"1"`` is not an int, ``true`` is not a number);
* optional keys may be absent but never ``null``;
* unknown *keys* on a known shape are allowed (newer writers may add fields);
* merge-extensible unions accept unknown variants: a content block whose ``type`` is
  a string naming no known block, or a finish reason whose ``kind`` is an unknown
  string, passes as-is, with its other keys unchecked. Known variants are checked
  in full, also when nested (the ``content`` of a ``tool-result``);
* ``StreamChunk`` and ``Message.role`` are closed: an unknown value is malformed.

pydantic cannot read ``typing.TypedDict`` on Python 3.11, so the shapes of
:mod:`dsh.core.llm.types` are mirrored here as ``typing_extensions`` TypedDicts; a
test keeps the two in step.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Annotated, Any, Literal, NotRequired, TypeAlias, cast

from pydantic import ConfigDict, Discriminator, Tag, TypeAdapter, ValidationError, with_config
from pydantic_core import ErrorDetails
from typing_extensions import TypedDict

from dsh.core.errors import HarnessError
from dsh.core.llm.types import ContentBlock, FinishReason, Message, StreamChunk, TokenUsage

_CONFIG = ConfigDict(extra="allow", strict=True)

# Union branch tags contain a space so the error formatter can drop them from paths.
_BLOCK_TYPES = ("text", "reasoning", "tool-call", "tool-result", "image")
_FINISH_KINDS = ("stop", "tool-calls", "max-tokens", "aborted", "error")
_CHUNK_TYPES = (
    "block-start",
    "text-delta",
    "reasoning-delta",
    "tool-call-delta",
    "block-end",
    "usage",
    "finish",
)
_CHUNK_LIST = ", ".join(_CHUNK_TYPES)
_OTHER = "other variant"


@with_config(_CONFIG)
class _TextBlock(TypedDict):
    type: Literal["text"]
    text: str
    cache: NotRequired[Literal["ephemeral"]]


@with_config(_CONFIG)
class _ReasoningBlock(TypedDict):
    type: Literal["reasoning"]
    text: str


@with_config(_CONFIG)
class _ToolCallBlock(TypedDict):
    type: Literal["tool-call"]
    id: str
    name: str
    arguments: str


@with_config(_CONFIG)
class _ToolResultBlock(TypedDict):
    type: Literal["tool-result"]
    toolCallId: str
    content: list[_ContentBlock]
    isError: NotRequired[bool]
    cache: NotRequired[Literal["ephemeral"]]


@with_config(_CONFIG)
class _ImageBlock(TypedDict):
    type: Literal["image"]
    url: str
    mimeType: NotRequired[str]
    cache: NotRequired[Literal["ephemeral"]]


@with_config(_CONFIG)
class _OtherBlock(TypedDict):
    type: str


def _block_tag(value: object) -> str | None:
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    return f"{kind} block" if kind in _BLOCK_TYPES else _OTHER


_ContentBlock: TypeAlias = Annotated[
    Annotated[_TextBlock, Tag("text block")]
    | Annotated[_ReasoningBlock, Tag("reasoning block")]
    | Annotated[_ToolCallBlock, Tag("tool-call block")]
    | Annotated[_ToolResultBlock, Tag("tool-result block")]
    | Annotated[_ImageBlock, Tag("image block")]
    | Annotated[_OtherBlock, Tag(_OTHER)],
    Discriminator(
        _block_tag,
        custom_error_type="content_block",
        custom_error_message='a content block must be an object with a string "type"',
    ),
]


@with_config(_CONFIG)
class _Message(TypedDict):
    role: Literal["system", "user", "assistant"]
    content: list[_ContentBlock]


@with_config(_CONFIG)
class _TokenUsage(TypedDict):
    inputTokens: int
    outputTokens: int
    cacheReadTokens: NotRequired[int]
    cacheWriteTokens: NotRequired[int]
    reasoningTokens: NotRequired[int]


@with_config(_CONFIG)
class _StopFinish(TypedDict):
    kind: Literal["stop"]


@with_config(_CONFIG)
class _ToolCallsFinish(TypedDict):
    kind: Literal["tool-calls"]


@with_config(_CONFIG)
class _MaxTokensFinish(TypedDict):
    kind: Literal["max-tokens"]


@with_config(_CONFIG)
class _AbortedFinish(TypedDict):
    kind: Literal["aborted"]


@with_config(_CONFIG)
class _ErrorFinish(TypedDict):
    kind: Literal["error"]
    message: str
    code: NotRequired[str]


@with_config(_CONFIG)
class _OtherFinish(TypedDict):
    kind: str


def _finish_tag(value: object) -> str | None:
    if not isinstance(value, dict):
        return None
    kind = value.get("kind")
    return f"{kind} finish" if kind in _FINISH_KINDS else _OTHER


_FinishReason: TypeAlias = Annotated[
    Annotated[_StopFinish, Tag("stop finish")]
    | Annotated[_ToolCallsFinish, Tag("tool-calls finish")]
    | Annotated[_MaxTokensFinish, Tag("max-tokens finish")]
    | Annotated[_AbortedFinish, Tag("aborted finish")]
    | Annotated[_ErrorFinish, Tag("error finish")]
    | Annotated[_OtherFinish, Tag(_OTHER)],
    Discriminator(
        _finish_tag,
        custom_error_type="finish_reason",
        custom_error_message='a finish reason must be an object with a string "kind"',
    ),
]


@with_config(_CONFIG)
class _BlockStartChunk(TypedDict):
    type: Literal["block-start"]
    index: int
    blockType: str


@with_config(_CONFIG)
class _TextDeltaChunk(TypedDict):
    type: Literal["text-delta"]
    index: int
    text: str


@with_config(_CONFIG)
class _ReasoningDeltaChunk(TypedDict):
    type: Literal["reasoning-delta"]
    index: int
    text: str


@with_config(_CONFIG)
class _ToolCallDeltaChunk(TypedDict):
    type: Literal["tool-call-delta"]
    index: int
    id: str
    name: NotRequired[str]
    argumentsDelta: str


@with_config(_CONFIG)
class _BlockEndChunk(TypedDict):
    type: Literal["block-end"]
    index: int
    block: _ContentBlock


@with_config(_CONFIG)
class _UsageChunk(TypedDict):
    type: Literal["usage"]
    usage: _TokenUsage


@with_config(_CONFIG)
class _FinishChunk(TypedDict):
    type: Literal["finish"]
    reason: _FinishReason


def _chunk_tag(value: object) -> str | None:
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    return f"{kind} chunk" if kind in _CHUNK_TYPES else None


_StreamChunk: TypeAlias = Annotated[
    Annotated[_BlockStartChunk, Tag("block-start chunk")]
    | Annotated[_TextDeltaChunk, Tag("text-delta chunk")]
    | Annotated[_ReasoningDeltaChunk, Tag("reasoning-delta chunk")]
    | Annotated[_ToolCallDeltaChunk, Tag("tool-call-delta chunk")]
    | Annotated[_BlockEndChunk, Tag("block-end chunk")]
    | Annotated[_UsageChunk, Tag("usage chunk")]
    | Annotated[_FinishChunk, Tag("finish chunk")],
    Discriminator(
        _chunk_tag,
        custom_error_type="stream_chunk",
        custom_error_message=f'a stream chunk must be an object whose "type" is one of: {_CHUNK_LIST}',
    ),
]

_SHAPES: dict[str, Any] = {
    "content block": _ContentBlock,
    "message": _Message,
    "stream chunk": _StreamChunk,
    "token usage": _TokenUsage,
    "finish reason": _FinishReason,
}


@cache
def _adapter(what: str) -> TypeAdapter[Any]:
    return TypeAdapter(_SHAPES[what])


def _path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif " " not in part:
            path += f".{part}" if path else part
    return path


def _shown(value: object) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _problem(error: ErrorDetails) -> str:
    path = _path(error["loc"])
    message = error["msg"] if error["type"] == "missing" else f"{error['msg']} (got {_shown(error['input'])})"
    return f"{path}: {message}" if path else message


def _check(what: str, value: object) -> None:
    try:
        _adapter(what).validate_python(value)
    except ValidationError as error:
        problems = "; ".join(_problem(detail) for detail in error.errors(include_url=False))
        raise HarnessError(f"malformed {what}: {problems}", "MALFORMED", cause=error) from error


def parse_content_block(value: object) -> ContentBlock:
    """``value`` as a content block (an unknown ``type`` passes as-is), or raise MALFORMED."""
    _check("content block", value)
    return cast(ContentBlock, value)


def parse_message(value: object) -> Message:
    """``value`` as a message (``role`` is closed, blocks are open), or raise MALFORMED."""
    _check("message", value)
    return cast(Message, value)


def parse_stream_chunk(value: object) -> StreamChunk:
    """``value`` as a stream chunk (a closed union), or raise MALFORMED."""
    _check("stream chunk", value)
    return cast(StreamChunk, value)


def parse_token_usage(value: object) -> TokenUsage:
    """``value`` as token counts (integers, never booleans or floats), or raise MALFORMED."""
    _check("token usage", value)
    return cast(TokenUsage, value)


def parse_finish_reason(value: object) -> FinishReason:
    """``value`` as a finish reason (an unknown ``kind`` passes as-is), or raise MALFORMED."""
    _check("finish reason", value)
    return cast(FinishReason, value)
