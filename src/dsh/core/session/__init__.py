"""The session: an event-sourced, append-only log and the ``sessions`` store (SPEC §3).

A :class:`Session` is the single source of truth of a conversation; the model's
history is derived from it (:func:`derive_messages`). :class:`SessionStore` (service
key :data:`SESSIONS`) creates live sessions on behalf of the calling plugin and feeds
every append to ``session/event`` listeners such as persistence backends.
"""

from dsh.core.session.derive import derive_messages
from dsh.core.session.events import SESSION_CREATED, SESSION_EVENT, SESSION_FLUSH
from dsh.core.session.jsonvalue import JsonValue, NotJsonError, dumps_json, is_json_value, json_snapshot
from dsh.core.session.repair import INTERRUPTED_RESULT_TEXT, interrupted_turn_closers
from dsh.core.session.session import EventLog, Session, is_turn_open, last_turn_number
from dsh.core.session.store import SESSIONS, SessionStore
from dsh.core.session.types import (
    SESSION_FORMAT_VERSION,
    AbortedReason,
    AssistantChunkData,
    AssistantMessageData,
    CompletedReason,
    ContinuationTrigger,
    DisposedReason,
    ErrorData,
    ErrorReason,
    EventType,
    InjectionTrigger,
    InterruptedReason,
    MaxTokensReason,
    MessageData,
    MessageTrigger,
    SessionEvent,
    SessionHeader,
    SessionId,
    SessionMeta,
    SteeringMessageData,
    StepData,
    ToolCallData,
    ToolErrorInfo,
    ToolResultData,
    TurnEndData,
    TurnEndReason,
    TurnStartData,
    TurnTrigger,
    UsageData,
)
from dsh.core.session.validate import (
    header_line,
    parse_session_event,
    parse_session_event_line,
    parse_session_header,
    parse_session_header_line,
    session_event_line,
)

__all__ = [
    "INTERRUPTED_RESULT_TEXT",
    "SESSIONS",
    "SESSION_CREATED",
    "SESSION_EVENT",
    "SESSION_FLUSH",
    "SESSION_FORMAT_VERSION",
    "AbortedReason",
    "AssistantChunkData",
    "AssistantMessageData",
    "CompletedReason",
    "ContinuationTrigger",
    "DisposedReason",
    "ErrorData",
    "ErrorReason",
    "EventLog",
    "EventType",
    "InjectionTrigger",
    "InterruptedReason",
    "JsonValue",
    "MaxTokensReason",
    "MessageData",
    "MessageTrigger",
    "NotJsonError",
    "Session",
    "SessionEvent",
    "SessionHeader",
    "SessionId",
    "SessionMeta",
    "SessionStore",
    "SteeringMessageData",
    "StepData",
    "ToolCallData",
    "ToolErrorInfo",
    "ToolResultData",
    "TurnEndData",
    "TurnEndReason",
    "TurnStartData",
    "TurnTrigger",
    "UsageData",
    "derive_messages",
    "dumps_json",
    "header_line",
    "interrupted_turn_closers",
    "is_json_value",
    "is_turn_open",
    "json_snapshot",
    "last_turn_number",
    "parse_session_event",
    "parse_session_event_line",
    "parse_session_header",
    "parse_session_header_line",
    "session_event_line",
]
