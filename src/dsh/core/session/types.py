"""The session event log vocabulary (SPEC §3.1).

A session is an append-only list of :class:`SessionEvent` records; the envelope keys
are ``type, seq, time, data`` in that order and ``data`` is JSON. Like the llm
vocabulary these are ``TypedDict`` so a logged event is exactly its JSON form.
``SessionEvent.type`` is an open set: plugins may log their own types.
"""

from typing import Any, Literal, NotRequired, TypeAlias

from typing_extensions import TypedDict

from dsh.core.llm.types import CallId, ContentBlock, MessageSource, StreamChunk, TokenUsage

SessionId: TypeAlias = str
SESSION_FORMAT_VERSION = 1


class SessionHeader(TypedDict):
    """Immutable out-of-log metadata; ``cwd`` is absolute when present."""

    version: int
    id: SessionId
    createdAt: int
    cwd: NotRequired[str]
    parentSession: NotRequired[str]


class SessionMeta(TypedDict, total=False):
    """What a creator may say about a new session's header."""

    cwd: str
    parentSession: str
    createdAt: int


class MessageTrigger(TypedDict):
    kind: Literal["message"]
    source: MessageSource


class ContinuationTrigger(TypedDict):
    kind: Literal["continuation"]


class InjectionTrigger(TypedDict):
    kind: Literal["injection"]
    source: MessageSource


TurnTrigger: TypeAlias = MessageTrigger | ContinuationTrigger | InjectionTrigger


class CompletedReason(TypedDict):
    kind: Literal["completed"]


class AbortedReason(TypedDict):
    kind: Literal["aborted"]
    reason: NotRequired[str]


class ErrorReason(TypedDict):
    kind: Literal["error"]
    message: str
    code: NotRequired[str]


class DisposedReason(TypedDict):
    kind: Literal["disposed"]


class MaxTokensReason(TypedDict):
    kind: Literal["max-tokens"]


class InterruptedReason(TypedDict):
    kind: Literal["interrupted"]


TurnEndReason: TypeAlias = (
    CompletedReason | AbortedReason | ErrorReason | DisposedReason | MaxTokensReason | InterruptedReason
)


class TurnStartData(TypedDict):
    turn: int
    trigger: TurnTrigger


class TurnEndData(TypedDict):
    turn: int
    reason: TurnEndReason


class StepData(TypedDict):
    turn: int
    step: int


class MessageData(TypedDict):
    """``user/message`` and ``context/message``."""

    content: list[ContentBlock]
    source: MessageSource


class AssistantChunkData(TypedDict):
    turn: int
    step: int
    chunk: StreamChunk


class AssistantMessageData(TypedDict):
    turn: int
    step: int
    content: list[ContentBlock]


class ToolCallData(TypedDict):
    turn: int
    step: int
    callId: CallId
    name: str
    arguments: str


class ToolErrorInfo(TypedDict):
    name: str
    code: str


class ToolResultData(TypedDict):
    turn: int
    step: int
    callId: CallId
    content: list[ContentBlock]
    isError: bool
    error: NotRequired[ToolErrorInfo]


class SteeringMessageData(TypedDict):
    turn: int
    content: list[ContentBlock]
    source: MessageSource


class UsageData(TypedDict):
    turn: int
    step: int
    usage: TokenUsage


class ErrorData(TypedDict):
    turn: int
    step: int
    message: str
    code: NotRequired[str]


class SessionEvent(TypedDict):
    """One log record. ``seq`` is its index (contiguous from 0), ``time`` epoch ms."""

    type: str
    seq: int
    time: int
    data: Any


EventType: TypeAlias = Literal[
    "turn/start",
    "turn/end",
    "step/start",
    "step/end",
    "user/message",
    "context/message",
    "assistant/chunk",
    "assistant/message",
    "tool/call",
    "tool/result",
    "steering/message",
    "usage",
    "error",
]
