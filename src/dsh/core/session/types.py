"""The session event log vocabulary (SPEC §3.1).

A session is an append-only list of events. Every event is an immutable
``msgspec.Struct`` whose class names its ``type`` (the tag) and whose ``data`` is
its typed payload: ``event.data.turn``, ``match event: case ToolCallEvent(data=call)``.
Encoded, an event is exactly its log line: keys ``type, seq, time, data`` in that
order, payload keys in SPEC order, camelCase.

The set of event types is open. A type this version does not define (a plugin's
own, or a newer writer's) is an :class:`UntypedEvent` holding its JSON ``data``;
a plugin that wants typed events of its own subclasses :class:`SessionEventBase`
and registers the class (:func:`dsh.core.session.codec.register_event_type`).
Nested open unions (blocks, sources, triggers, reasons) may hold ``Unknown``
values, kept exactly as read (SPEC §0.6).

Like the values of :mod:`dsh.core.llm.types`, events and their payloads are not
tracked by the cycle collector (``gc=False``) and must never be part of a
reference cycle (a plugin's own event types inherit this from
:class:`SessionEventBase`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeAlias

from msgspec import UNSET, Struct, UnsetType

from dsh.core.llm.types import CallId, ContentBlock, Count, MessageSource, StreamChunk, TokenUsage, Unknown

SessionId: TypeAlias = str
SESSION_FORMAT_VERSION = 1


class SessionHeader(Struct, frozen=True, gc=False, kw_only=True, rename="camel"):
    """Immutable out-of-log metadata; ``cwd`` is absolute when present.

    A fork's header names its source (``parent_session``) and how many of its first
    events were copied from it (``seed_length``, the fork point): events before that
    index are the source's history, not this session's own work.

    A sub-agent's session (``origin`` ``"subagent"``) names the session of the agent
    that started it (``parent_session``, without ``seed_length``: nothing was copied),
    the tool call that did (``parent_call_id``, absent when started outside a tool
    call) and its delegation depth (``delegation_depth``: 1 for a child of a top-level
    agent, its parent's plus one below that; absent means 0). It is durable so that a
    resumed child keeps its place in the delegation tree.
    """

    version: int
    id: SessionId
    created_at: Count
    cwd: str | UnsetType = UNSET
    parent_session: str | UnsetType = UNSET
    seed_length: Count | UnsetType = UNSET
    parent_call_id: str | UnsetType = UNSET
    origin: Literal["subagent"] | UnsetType = UNSET
    delegation_depth: Count | UnsetType = UNSET


class SessionMeta(Struct, frozen=True, gc=False, kw_only=True, rename="camel"):
    """What a creator may say about a new session's header."""

    cwd: str | UnsetType = UNSET
    parent_session: str | UnsetType = UNSET
    created_at: Count | UnsetType = UNSET
    seed_length: Count | UnsetType = UNSET
    parent_call_id: str | UnsetType = UNSET
    origin: Literal["subagent"] | UnsetType = UNSET
    delegation_depth: Count | UnsetType = UNSET


# ------------------------------------------------------------------ triggers
class _Trigger(Struct, frozen=True, gc=False, tag_field="kind"):
    """Base of the turn triggers."""


class MessageTrigger(_Trigger, frozen=True, tag="message"):
    source: MessageSource


class ContinuationTrigger(_Trigger, frozen=True, tag="continuation"):
    pass


class InjectionTrigger(_Trigger, frozen=True, tag="injection"):
    source: MessageSource


TurnTrigger: TypeAlias = MessageTrigger | ContinuationTrigger | InjectionTrigger | Unknown


# ---------------------------------------------------------- turn-end reasons
class _Reason(Struct, frozen=True, gc=False, tag_field="kind"):
    """Base of the turn-end reasons."""


class CompletedReason(_Reason, frozen=True, tag="completed"):
    pass


class AbortedReason(_Reason, frozen=True, tag="aborted"):
    reason: str | UnsetType = UNSET


class ErrorReason(_Reason, frozen=True, tag="error"):
    message: str
    code: str | UnsetType = UNSET


class DisposedReason(_Reason, frozen=True, tag="disposed"):
    pass


class MaxTokensReason(_Reason, frozen=True, tag="max-tokens"):
    pass


class InterruptedReason(_Reason, frozen=True, tag="interrupted"):
    pass


class MaxCostReason(_Reason, frozen=True, tag="max-cost"):
    """The session's cost reached its budget before a model call: ``cost`` spent of ``limit`` (USD)."""

    limit: float
    cost: float


class MaxStepsReason(_Reason, frozen=True, tag="max-steps"):
    """The turn reached its step limit (``max_steps``) while the model still wanted to go on."""


TurnEndReason: TypeAlias = (
    CompletedReason
    | AbortedReason
    | ErrorReason
    | DisposedReason
    | MaxTokensReason
    | InterruptedReason
    | MaxCostReason
    | MaxStepsReason
    | Unknown
)


# ------------------------------------------------------------------ payloads
class _Data(Struct, frozen=True, gc=False, rename="camel"):
    """Base of the event payloads."""


class TurnStartData(_Data, frozen=True):
    turn: Count
    trigger: TurnTrigger


class TurnEndData(_Data, frozen=True):
    turn: Count
    reason: TurnEndReason


class StepData(_Data, frozen=True):
    """``step/start`` and ``step/end``."""

    turn: Count
    step: Count


class MessageData(_Data, frozen=True):
    """``user/message`` and ``context/message``."""

    content: tuple[ContentBlock, ...]
    source: MessageSource


class AssistantChunkData(_Data, frozen=True):
    turn: Count
    step: Count
    chunk: StreamChunk


class AssistantMessageData(_Data, frozen=True):
    turn: Count
    step: Count
    content: tuple[ContentBlock, ...]


class ToolCallData(_Data, frozen=True):
    turn: Count
    step: Count
    call_id: CallId
    name: str
    arguments: str


class ToolErrorInfo(Struct, frozen=True, gc=False):
    name: str
    code: str


class ToolResultData(_Data, frozen=True):
    turn: Count
    step: Count
    call_id: CallId
    content: tuple[ContentBlock, ...]
    is_error: bool
    error: ToolErrorInfo | UnsetType = UNSET


class SteeringMessageData(_Data, frozen=True):
    turn: Count
    content: tuple[ContentBlock, ...]
    source: MessageSource


class UsageData(_Data, frozen=True):
    turn: Count
    step: Count
    usage: TokenUsage


class ErrorData(_Data, frozen=True):
    turn: Count
    step: Count
    message: str
    code: str | UnsetType = UNSET


class PrunedResult(Struct, frozen=True, gc=False, kw_only=True, rename="camel"):
    """An old ``tool/result`` the model sees shortened from a ``compaction`` on.

    ``original_seq`` is the logged result (kept in the log as it was); ``content`` is
    what the model sees instead (its head and tail, with a note of the cut);
    ``chars_before`` / ``chars_after`` measure the text of both.
    """

    original_seq: Count
    call_id: CallId
    chars_before: Count
    chars_after: Count
    content: tuple[ContentBlock, ...]


class CompactionData(_Data, frozen=True, kw_only=True, omit_defaults=True):
    """``compaction``: what the model sees from this event on (see :func:`~dsh.core.session.derive_messages`).

    ``summary`` (a user-role text) stands for every event before ``kept_from``, the
    seq of the first event kept verbatim (the cut never separates a tool call from
    its result); ``pruned`` lists old tool results shown shortened. A compaction
    with ``error`` is a failed attempt and changes nothing. ``trigger`` is
    ``pressure``, ``context-overflow`` or ``manual``; ``turn`` and ``step`` are absent
    for a compaction between turns. ``tokens_before`` / ``tokens_after`` are the
    request's estimated size without and with it; ``model`` and ``usage`` describe
    the summary request, when one was made.
    """

    trigger: str
    turn: Count | UnsetType = UNSET
    step: Count | UnsetType = UNSET
    summary: str | UnsetType = UNSET
    kept_from: Count | UnsetType = UNSET
    pruned: tuple[PrunedResult, ...] = ()
    tokens_before: Count | UnsetType = UNSET
    tokens_after: Count | UnsetType = UNSET
    model: str | UnsetType = UNSET
    usage: TokenUsage | UnsetType = UNSET
    error: str | UnsetType = UNSET


# -------------------------------------------------------------------- events
class SessionEventBase(Struct, frozen=True, gc=False, tag_field="type"):
    """One log record: ``seq`` is its index (contiguous from 0), ``time`` epoch ms.

    Subclasses set ``tag=<event type>`` and declare ``data``; the session fills
    ``seq`` and ``time`` when it appends.
    """

    seq: Count
    time: Count

    @property
    def type(self) -> str:
        """The event type (the tag)."""
        return self.__struct_config__.tag  # type: ignore[return-value]


class TurnStartEvent(SessionEventBase, frozen=True, tag="turn/start"):
    data: TurnStartData


class TurnEndEvent(SessionEventBase, frozen=True, tag="turn/end"):
    data: TurnEndData


class StepStartEvent(SessionEventBase, frozen=True, tag="step/start"):
    data: StepData


class StepEndEvent(SessionEventBase, frozen=True, tag="step/end"):
    data: StepData


class UserMessageEvent(SessionEventBase, frozen=True, tag="user/message"):
    data: MessageData


class ContextMessageEvent(SessionEventBase, frozen=True, tag="context/message"):
    data: MessageData


class AssistantChunkEvent(SessionEventBase, frozen=True, tag="assistant/chunk"):
    data: AssistantChunkData


class AssistantMessageEvent(SessionEventBase, frozen=True, tag="assistant/message"):
    data: AssistantMessageData


class ToolCallEvent(SessionEventBase, frozen=True, tag="tool/call"):
    data: ToolCallData


class ToolResultEvent(SessionEventBase, frozen=True, tag="tool/result"):
    data: ToolResultData


class SteeringMessageEvent(SessionEventBase, frozen=True, tag="steering/message"):
    data: SteeringMessageData


class UsageEvent(SessionEventBase, frozen=True, tag="usage"):
    data: UsageData


class ErrorEvent(SessionEventBase, frozen=True, tag="error"):
    data: ErrorData


class CompactionEvent(SessionEventBase, frozen=True, tag="compaction"):
    """``compaction``: the model's history is shortened from here on (see :class:`CompactionData`)."""

    data: CompactionData


class ModelSelectData(Struct, frozen=True, gc=False, rename="camel"):
    """The model a session switched to; its later model requests use it."""

    model: str


class ModelSelectEvent(SessionEventBase, frozen=True, tag="model/select"):
    """``model/select``: the session's model from here on (an editor's choice, logged in a turn)::

        {"type":"model/select","seq":7,"time":0,"data":{"model":"deepseek-v4-pro"}}

    A resumed session takes the last one (see :func:`logged_model`); a model asked for
    explicitly at resume (``dsh run --model``) wins over it.
    """

    data: ModelSelectData


def logged_model(events: Sequence[SessionEvent]) -> str | None:
    """The model of the last ``model/select`` in ``events`` (None when there is none)."""
    for event in reversed(events):
        if type(event) is ModelSelectEvent:
            return event.data.model
    return None


class UntypedEvent(Struct, frozen=True, gc=False):
    """An event of a type no registered class defines; ``data`` is its JSON (do not mutate it)."""

    type: str
    seq: Count
    time: Count
    data: Any


CoreEvent: TypeAlias = (
    TurnStartEvent
    | TurnEndEvent
    | StepStartEvent
    | StepEndEvent
    | UserMessageEvent
    | ContextMessageEvent
    | AssistantChunkEvent
    | AssistantMessageEvent
    | ToolCallEvent
    | ToolResultEvent
    | SteeringMessageEvent
    | UsageEvent
    | ErrorEvent
    | CompactionEvent
    | ModelSelectEvent
)
"""The event types of SPEC §3.1, ``compaction`` and ``model/select``."""

SessionEvent: TypeAlias = SessionEventBase | UntypedEvent
"""Any logged event: a typed one (core or registered) or an :class:`UntypedEvent`."""

CORE_EVENT_TYPES: tuple[type[SessionEventBase], ...] = (
    TurnStartEvent,
    TurnEndEvent,
    StepStartEvent,
    StepEndEvent,
    UserMessageEvent,
    ContextMessageEvent,
    AssistantChunkEvent,
    AssistantMessageEvent,
    ToolCallEvent,
    ToolResultEvent,
    SteeringMessageEvent,
    UsageEvent,
    ErrorEvent,
    CompactionEvent,
    ModelSelectEvent,
)

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
    "compaction",
]
