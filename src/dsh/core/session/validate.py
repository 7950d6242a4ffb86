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
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any

from dsh.core.errors import HarnessError
from dsh.core.session.jsonvalue import NotJsonError, check_json, dumps_json, json_snapshot
from dsh.core.session.types import SessionEvent, SessionHeader

if TYPE_CHECKING:
    from pydantic import ValidationError


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
    from pydantic import ValidationError

    from dsh.core.session import shapes  # the pydantic shapes, defined on the first parse

    event = _snapshot(value, "session event", copy)
    try:
        shapes.adapter(shapes.Envelope).validate_python(event)
    except ValidationError as error:
        raise HarnessError(
            f"malformed session event: {_problems(error)} "
            "(a logged event is {type: str, seq: int >= 0, time: int, data})",
            "MALFORMED",
            cause=error,
        ) from error
    kind = event["type"]
    shape = shapes.PAYLOADS.get(kind)
    if shape is not None:
        try:
            shapes.adapter(shape).validate_python(event["data"])
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
    from pydantic import ValidationError

    from dsh.core.session import shapes  # the pydantic shapes, defined on the first parse

    raw = _snapshot(value, "session header")
    try:
        checked = shapes.adapter(shapes.Header).validate_python(raw)
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
