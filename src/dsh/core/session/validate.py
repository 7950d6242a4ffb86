"""Checking session data that arrives from outside, and writing it back (SPEC §3.1, §4b).

A log read from a file, a database row or a socket is untrusted: :func:`parse_session_event`
and :func:`parse_session_header` check it against the wire shapes with pydantic and
return plain typed values (``TypedDict``) that hold exactly the JSON that was read.
Known event types must carry their documented payload; unknown types are accepted
when the envelope is valid (the set of event types is open), and so are unknown
content-block types, sources, triggers, turn-end and finish reasons. Optional fields
must be absent, not ``null``; numbers that must be integers must be JSON integers.

:func:`session_event_line` and :func:`header_line` produce the exact JSONL text of
one log line (without the terminating newline) in the reference key order.
"""

from __future__ import annotations

import json
from functools import cache
from json.encoder import encode_basestring
from typing import Annotated, Any, Literal, NotRequired

from pydantic import ConfigDict, Discriminator, Field, Tag, TypeAdapter, ValidationError, with_config
from typing_extensions import TypedDict

from dsh.core.errors import HarnessError
from dsh.core.session.jsonvalue import NotJsonError, check_json, dumps_json, json_snapshot
from dsh.core.session.types import SessionEvent, SessionHeader

# Pydantic needs typing_extensions.TypedDict on Python 3.11, so the wire shapes are
# restated here for validation only; the values handed out are the ones read. Open
# unions route a known tag to its shape and any other tag to a catch-all shape.

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
class _Envelope(TypedDict):
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


_PAYLOADS: dict[str, Any] = {
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
def _adapter(shape: Any) -> TypeAdapter[Any]:
    """The validator of ``shape``, built on first use (building all of them costs ~20 ms at import)."""
    return TypeAdapter(shape)


@with_config(_STRICT)
class _Header(TypedDict):
    type: NotRequired[Literal["session"]]
    version: int
    id: str
    createdAt: int
    cwd: NotRequired[str]
    parentSession: NotRequired[str]


# ------------------------------------------------------------------------ parsing
def _problems(error: ValidationError) -> str:
    shown = []
    for item in error.errors()[:3]:
        where = ".".join(str(part) for part in item["loc"]) or "(root)"
        shown.append(f"{where}: {item['msg']}")
    more = error.error_count() - len(shown)
    return "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")


def _snapshot(value: object, what: str, copy: bool = True) -> Any:
    try:
        if not copy:
            check_json(value)
            return value
        return json_snapshot(value)
    except NotJsonError as error:
        raise HarnessError(f"malformed {what}: {error}", "MALFORMED", cause=error) from error


def parse_session_event(value: object, *, copy: bool = True) -> SessionEvent:
    """Check ``value`` (decoded JSON) as a logged event and return a plain copy of it.

    Raises ``HarnessError(code="MALFORMED")`` naming the bad fields when ``value`` is
    not JSON, the envelope ``{type, seq, time, data}`` is wrong, or a known type's
    ``data`` does not match SPEC §3.1. The copy keeps every key and its order.

    ``copy=False`` is for a value the caller hands over, such as the fresh result of
    ``json.loads`` that nothing else references: it is checked the same way and
    returned itself, uncopied.
    """
    event = _snapshot(value, "session event", copy)
    try:
        _adapter(_Envelope).validate_python(event)
    except ValidationError as error:
        raise HarnessError(
            f"malformed session event: {_problems(error)} "
            "(a logged event is {type: str, seq: int >= 0, time: int, data})",
            "MALFORMED",
            cause=error,
        ) from error
    kind = event["type"]
    shape = _PAYLOADS.get(kind)
    if shape is not None:
        try:
            _adapter(shape).validate_python(event["data"])
        except ValidationError as error:
            raise HarnessError(
                f'malformed "{kind}" event (seq {event["seq"]}): {_problems(error)} (see SPEC §3.1 for its data shape)',
                "MALFORMED",
                cause=error,
            ) from error
    parsed: SessionEvent = event
    return parsed


def parse_session_header(value: object) -> SessionHeader:
    """Check ``value`` as a session header (a header line's ``"type": "session"`` allowed).

    Returns a new header with the known keys in their canonical order (``version``,
    ``id``, ``createdAt``, ``cwd?``, ``parentSession?``); unknown keys are dropped.
    Raises ``HarnessError(code="MALFORMED")``. The version is not checked here.
    """
    raw = _snapshot(value, "session header")
    try:
        checked = _adapter(_Header).validate_python(raw)
    except ValidationError as error:
        raise HarnessError(
            f'malformed session header: {_problems(error)} (expected {{"type":"session","version":1,'
            '"id":…,"createdAt":…} with optional "cwd" and "parentSession")',
            "MALFORMED",
            cause=error,
        ) from error
    header: SessionHeader = {
        "version": checked["version"],
        "id": checked["id"],
        "createdAt": checked["createdAt"],
    }
    if "cwd" in checked:
        header["cwd"] = checked["cwd"]
    if "parentSession" in checked:
        header["parentSession"] = checked["parentSession"]
    return header


def _decode(line: str, what: str) -> object:
    try:
        return json.loads(line)
    except ValueError as error:
        raise HarnessError(f"malformed {what}: not valid JSON ({error})", "MALFORMED", cause=error) from error


def parse_session_event_line(line: str) -> SessionEvent:
    """:func:`parse_session_event` of one JSONL line (surrounding whitespace ignored).

    The decoded value is fresh, so it is checked in place and returned uncopied.
    """
    return parse_session_event(_decode(line, "session event"), copy=False)


def parse_session_header_line(line: str) -> SessionHeader:
    """:func:`parse_session_header` of a JSONL header line; ``"type": "session"`` is required."""
    value = _decode(line, "session header")
    if not isinstance(value, dict) or value.get("type") != "session":
        raise HarnessError(
            'malformed session header: the first line of a session log must be {"type":"session",…}',
            "MALFORMED",
        )
    return parse_session_header(value)


# ----------------------------------------------------------------------- writing
def event_line(kind: str, seq: int, time: int, data_json: str) -> str:
    """The JSONL text ``{"type","seq","time","data"}`` of an event whose ``data`` is already encoded.

    ``kind`` must be an exact ``str`` and ``seq``/``time`` exact ``int`` (the
    envelope ``Session.append`` logs); ``data_json`` is compact JSON. No newline.
    The one place the line format is written: :func:`session_event_line` and the
    persistence coordinator's encoded batches both use it.
    """
    return f'{{"type":{encode_basestring(kind)},"seq":{seq},"time":{time},"data":{data_json}}}'


def session_event_line(event: SessionEvent) -> str:
    """The JSONL text of ``event``: ``{"type","seq","time","data"}`` compact, no newline.

    The usual envelope (a ``str`` type, ``int`` seq and time) is spliced around the
    encoded ``data`` (:func:`event_line`) rather than encoded as a dict. Thread-safe.
    """
    kind = event["type"]
    seq = event["seq"]
    time = event["time"]
    if type(kind) is str and type(seq) is int and type(time) is int:
        return event_line(kind, seq, time, dumps_json(event["data"]))
    return dumps_json({"type": kind, "seq": seq, "time": time, "data": event["data"]})


def header_line(header: SessionHeader) -> str:
    """The JSONL header text ``{"type":"session","version","id","createdAt"[,"cwd"][,"parentSession"]}``.

    Compact, in that key order, without the terminating newline; absent optional keys
    are omitted.
    """
    line: dict[str, object] = {
        "type": "session",
        "version": header["version"],
        "id": header["id"],
        "createdAt": header["createdAt"],
    }
    if "cwd" in header:
        line["cwd"] = header["cwd"]
    if "parentSession" in header:
        line["parentSession"] = header["parentSession"]
    return dumps_json(line)
