"""The pydantic shapes :mod:`.validate` checks session data against (SPEC §3.1), built on first use.

Pydantic needs ``typing_extensions.TypedDict`` on Python 3.11, so the wire shapes are
restated here for validation only; the values handed out are the ones read. Open
unions route a known tag to its shape and any other tag to a catch-all shape.
:mod:`.validate` imports this module the first time it parses something, so a
process that only writes session logs never defines these classes.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, Literal, NotRequired

from pydantic import ConfigDict, Discriminator, Field, Tag, TypeAdapter, with_config
from typing_extensions import TypedDict

_UNKNOWN = "*"
_STRICT = ConfigDict(strict=True)
_Count = Annotated[int, Field(ge=0)]


def _route(key: str, *known: str) -> Discriminator:
    """Pick the union member by ``value[key]``; unknown tags go to the catch-all."""
    tags = frozenset(known)

    def pick(value: Any) -> str:
        tag = value.get(key) if isinstance(value, dict) else None
        return tag if isinstance(tag, str) and tag in tags else _UNKNOWN

    return Discriminator(pick)


class _AnyType(TypedDict):
    type: str


class _AnyKind(TypedDict):
    kind: str


# ---------------------------------------------------------------- content blocks
class _Text(TypedDict):
    type: Literal["text"]
    text: str
    cache: NotRequired[Literal["ephemeral"]]


class _Reasoning(TypedDict):
    type: Literal["reasoning"]
    text: str


class _ToolCall(TypedDict):
    type: Literal["tool-call"]
    id: str
    name: str
    arguments: str


class _ToolResult(TypedDict):
    type: Literal["tool-result"]
    toolCallId: str
    content: list[_Block]
    isError: NotRequired[bool]
    cache: NotRequired[Literal["ephemeral"]]


class _Image(TypedDict):
    type: Literal["image"]
    url: str
    mimeType: NotRequired[str]
    cache: NotRequired[Literal["ephemeral"]]


_Block = Annotated[
    Annotated[_Text, Tag("text")]
    | Annotated[_Reasoning, Tag("reasoning")]
    | Annotated[_ToolCall, Tag("tool-call")]
    | Annotated[_ToolResult, Tag("tool-result")]
    | Annotated[_Image, Tag("image")]
    | Annotated[_AnyType, Tag(_UNKNOWN)],
    _route("type", "text", "reasoning", "tool-call", "tool-result", "image"),
]


# -------------------------------------------------------------- sources, reasons
class _UserSource(TypedDict):
    kind: Literal["user"]


class _PluginSource(TypedDict):
    kind: Literal["plugin"]
    plugin: str


class _AgentSource(TypedDict):
    kind: Literal["agent"]
    agentId: str


_Source = Annotated[
    Annotated[_UserSource, Tag("user")]
    | Annotated[_PluginSource, Tag("plugin")]
    | Annotated[_AgentSource, Tag("agent")]
    | Annotated[_AnyKind, Tag(_UNKNOWN)],
    _route("kind", "user", "plugin", "agent"),
]


class _MessageTrigger(TypedDict):
    kind: Literal["message"]
    source: _Source


class _ContinuationTrigger(TypedDict):
    kind: Literal["continuation"]


class _InjectionTrigger(TypedDict):
    kind: Literal["injection"]
    source: _Source


_Trigger = Annotated[
    Annotated[_MessageTrigger, Tag("message")]
    | Annotated[_ContinuationTrigger, Tag("continuation")]
    | Annotated[_InjectionTrigger, Tag("injection")]
    | Annotated[_AnyKind, Tag(_UNKNOWN)],
    _route("kind", "message", "continuation", "injection"),
]


class _Completed(TypedDict):
    kind: Literal["completed"]


class _Aborted(TypedDict):
    kind: Literal["aborted"]
    reason: NotRequired[str]


class _ErrorReason(TypedDict):
    kind: Literal["error"]
    message: str
    code: NotRequired[str]


class _Disposed(TypedDict):
    kind: Literal["disposed"]


class _MaxTokens(TypedDict):
    kind: Literal["max-tokens"]


class _Interrupted(TypedDict):
    kind: Literal["interrupted"]


_TurnEndReason = Annotated[
    Annotated[_Completed, Tag("completed")]
    | Annotated[_Aborted, Tag("aborted")]
    | Annotated[_ErrorReason, Tag("error")]
    | Annotated[_Disposed, Tag("disposed")]
    | Annotated[_MaxTokens, Tag("max-tokens")]
    | Annotated[_Interrupted, Tag("interrupted")]
    | Annotated[_AnyKind, Tag(_UNKNOWN)],
    _route("kind", "completed", "aborted", "error", "disposed", "max-tokens", "interrupted"),
]


class _Stop(TypedDict):
    kind: Literal["stop"]


class _ToolCalls(TypedDict):
    kind: Literal["tool-calls"]


class _AbortedFinish(TypedDict):
    kind: Literal["aborted"]


_FinishReason = Annotated[
    Annotated[_Stop, Tag("stop")]
    | Annotated[_ToolCalls, Tag("tool-calls")]
    | Annotated[_MaxTokens, Tag("max-tokens")]
    | Annotated[_AbortedFinish, Tag("aborted")]
    | Annotated[_ErrorReason, Tag("error")]
    | Annotated[_AnyKind, Tag(_UNKNOWN)],
    _route("kind", "stop", "tool-calls", "max-tokens", "aborted", "error"),
]


class _Usage(TypedDict):
    inputTokens: _Count
    outputTokens: _Count
    cacheReadTokens: NotRequired[_Count]
    cacheWriteTokens: NotRequired[_Count]
    reasoningTokens: NotRequired[_Count]


# -------------------------------------------------- stream chunks (closed union)
class _BlockStart(TypedDict):
    type: Literal["block-start"]
    index: _Count
    blockType: str


class _TextDelta(TypedDict):
    type: Literal["text-delta"]
    index: _Count
    text: str


class _ReasoningDelta(TypedDict):
    type: Literal["reasoning-delta"]
    index: _Count
    text: str


class _ToolCallDelta(TypedDict):
    type: Literal["tool-call-delta"]
    index: _Count
    id: str
    name: NotRequired[str]
    argumentsDelta: str


class _BlockEnd(TypedDict):
    type: Literal["block-end"]
    index: _Count
    block: _Block


class _UsageChunk(TypedDict):
    type: Literal["usage"]
    usage: _Usage


class _FinishChunk(TypedDict):
    type: Literal["finish"]
    reason: _FinishReason


_Chunk = Annotated[
    _BlockStart | _TextDelta | _ReasoningDelta | _ToolCallDelta | _BlockEnd | _UsageChunk | _FinishChunk,
    Field(discriminator="type"),
]


# ----------------------------------------------------------------- event payloads
@with_config(_STRICT)
class Envelope(TypedDict):
    type: str
    seq: _Count
    time: int
    data: Any


@with_config(_STRICT)
class _TurnStart(TypedDict):
    turn: int
    trigger: _Trigger


@with_config(_STRICT)
class _TurnEnd(TypedDict):
    turn: int
    reason: _TurnEndReason


@with_config(_STRICT)
class _Step(TypedDict):
    turn: int
    step: int


@with_config(_STRICT)
class _MessageData(TypedDict):
    content: list[_Block]
    source: _Source


@with_config(_STRICT)
class _ChunkData(TypedDict):
    turn: int
    step: int
    chunk: _Chunk


@with_config(_STRICT)
class _AssistantMessage(TypedDict):
    turn: int
    step: int
    content: list[_Block]


@with_config(_STRICT)
class _ToolCallData(TypedDict):
    turn: int
    step: int
    callId: str
    name: str
    arguments: str


class _ToolError(TypedDict):
    name: str
    code: str


@with_config(_STRICT)
class _ToolResultData(TypedDict):
    turn: int
    step: int
    callId: str
    content: list[_Block]
    isError: bool
    error: NotRequired[_ToolError]


@with_config(_STRICT)
class _Steering(TypedDict):
    turn: int
    content: list[_Block]
    source: _Source


@with_config(_STRICT)
class _UsageData(TypedDict):
    turn: int
    step: int
    usage: _Usage


@with_config(_STRICT)
class _ErrorData(TypedDict):
    turn: int
    step: int
    message: str
    code: NotRequired[str]


PAYLOADS: dict[str, Any] = {
    "turn/start": _TurnStart,
    "turn/end": _TurnEnd,
    "step/start": _Step,
    "step/end": _Step,
    "user/message": _MessageData,
    "context/message": _MessageData,
    "assistant/chunk": _ChunkData,
    "assistant/message": _AssistantMessage,
    "tool/call": _ToolCallData,
    "tool/result": _ToolResultData,
    "steering/message": _Steering,
    "usage": _UsageData,
    "error": _ErrorData,
}
"""The payload shape of every known event type (SPEC §3.1); other types are open."""


@cache
def adapter(shape: Any) -> TypeAdapter[Any]:
    """The validator of ``shape``, built on first use (building all of them costs ~20 ms at import)."""
    return TypeAdapter(shape)


@with_config(_STRICT)
class Header(TypedDict):
    type: NotRequired[Literal["session"]]
    version: int
    id: str
    createdAt: int
    cwd: NotRequired[str]
    parentSession: NotRequired[str]
