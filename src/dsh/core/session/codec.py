"""Session log lines in and out, checked in one pass (SPEC §3.1, §4b).

:func:`parse_session_event_line` decodes one JSONL line into its event class, which
validates it; :func:`session_event_line` writes an event back as that exact line.
An event type no registered class defines becomes an :class:`UntypedEvent` (its
envelope checked, its ``data`` any JSON); unknown variants nested in a known event
are kept as ``Unknown`` (see :mod:`dsh.core.llm.codec`). Either way the variant is
written back as it was read, never dropped (SPEC §0.6). Unknown *fields* of a known
shape are not kept: a known type is written in its SPEC form.

Plugins that log events of their own make them typed with
:func:`register_event_type`: the class is decoded like the core ones until the
returned disposer runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Union

import msgspec

from dsh.core.errors import HarnessError
from dsh.core.llm.codec import convert, decode, encode
from dsh.core.session.types import CORE_EVENT_TYPES, SessionEvent, SessionEventBase, SessionHeader, UntypedEvent

_HINT = "(a logged event is {type: str, seq: int >= 0, time: int >= 0, data}; see SPEC §3.1 for each type's data)"


def payload_type(cls: type[SessionEventBase]) -> type[Any]:
    """The class of the ``data`` an event class carries (``INVALID_EVENT_TYPE`` when it declares none)."""
    payload = _payloads.get(cls)
    if payload is None:
        for info in msgspec.structs.fields(cls):
            if info.name == "data" and isinstance(info.type, type) and issubclass(info.type, msgspec.Struct):
                payload = _payloads[cls] = info.type
                return payload
        raise HarnessError(
            f"{cls.__qualname__} declares no data field of a Struct type: declare `data: <YourData>`",
            "INVALID_EVENT_TYPE",
        )
    return payload


_payloads: dict[object, type[Any]] = {}
"""The payload class of every event class :func:`payload_type` has seen (read by ``Session.append``)."""


class _Registry:
    """The event classes the decoder knows, by type; rebuilt when a plugin adds or removes one."""

    def __init__(self) -> None:
        self.classes: dict[str, type[SessionEventBase]] = {_tag(cls): cls for cls in CORE_EVENT_TYPES}
        self.counts: dict[str, int] = {}
        for cls in CORE_EVENT_TYPES:
            payload_type(cls)
        self._rebuild()

    def _rebuild(self) -> None:
        union: Any = Union[tuple(self.classes.values())]  # noqa: UP007 - a union built at run time
        self.decoder: msgspec.json.Decoder[SessionEvent] = msgspec.json.Decoder(union)

    def add(self, cls: type[SessionEventBase]) -> Callable[[], None]:
        if not (isinstance(cls, type) and issubclass(cls, SessionEventBase) and type(cls.__struct_config__.tag) is str):
            name = getattr(cls, "__qualname__", repr(cls))
            raise HarnessError(
                f"{name} is no event class: subclass SessionEventBase with tag=<event type>", "INVALID_EVENT_TYPE"
            )
        payload_type(cls)
        tag = _tag(cls)
        if cls in CORE_EVENT_TYPES:
            return _keep  # a core type is always known; nothing to undo
        known = self.classes.get(tag)
        if known is not None and known is not cls:
            raise HarnessError(f'event type "{tag}" is already defined by {known.__qualname__}', "DUPLICATE_EVENT_TYPE")
        if known is None:
            self.classes[tag] = cls
            self._rebuild()
        self.counts[tag] = self.counts.get(tag, 0) + 1
        done = False

        def dispose() -> None:
            nonlocal done
            if done:
                return
            done = True
            self.counts[tag] -= 1
            if self.counts[tag] == 0:
                del self.counts[tag]
                del self.classes[tag]
                self._rebuild()

        return dispose


def _keep() -> None:
    """The disposer of a registration that changed nothing."""


def _tag(cls: type[SessionEventBase]) -> str:
    return cls.__struct_config__.tag  # type: ignore[return-value]  # every event class is tagged with a str


_registry = _Registry()


def register_event_type(cls: type[SessionEventBase]) -> Callable[[], None]:
    """Decode events of ``cls``'s type as ``cls`` until the returned disposer runs.

    Registering the same class again is counted (each disposer undoes one); another
    class for a type already defined raises ``DUPLICATE_EVENT_TYPE``.
    """
    return _registry.add(cls)


def event_class(type: str) -> type[SessionEventBase] | None:
    """The registered class of event ``type``, or None (then it is logged as an :class:`UntypedEvent`)."""
    return _registry.classes.get(type)


def parse_session_event(value: object) -> SessionEvent:
    """``value`` (decoded JSON) as a logged event, or raise MALFORMED naming the bad field."""
    kind = value.get("type") if isinstance(value, dict) else None
    cls = _registry.classes.get(kind) if isinstance(kind, str) else None
    if cls is None:
        return _untyped_or_raise(value)
    return convert(value, cls, f'"{kind}" event')


def _untyped_or_raise(value: object) -> UntypedEvent:
    try:
        return convert(value, UntypedEvent, "session event")
    except HarnessError as error:
        raise HarnessError(f"{error.message} {_HINT}", "MALFORMED", cause=error) from error


def parse_session_event_line(line: str | bytes) -> SessionEvent:
    """One JSONL line (surrounding whitespace allowed) as a logged event, or raise MALFORMED."""
    try:
        return _registry.decoder.decode(line)
    except msgspec.ValidationError:
        try:
            value = msgspec.json.decode(line)
        except msgspec.DecodeError as bad:  # the typed decoder stopped at a wrong value before the bad JSON
            raise _not_json(bad) from bad
        return parse_session_event(value)
    except msgspec.DecodeError as error:
        raise _not_json(error) from error


def _not_json(error: msgspec.DecodeError) -> HarnessError:
    return HarnessError(f"malformed session event: not valid JSON ({error})", "MALFORMED", cause=error)


def session_event_line(event: SessionEvent) -> str:
    """The JSONL text of ``event`` (compact, key order ``type, seq, time, data``), no newline."""
    return encode(event).decode()


def parse_session_header(value: object) -> SessionHeader:
    """``value`` as a session header (a ``"type": "session"`` key allowed), or raise MALFORMED."""
    if isinstance(value, dict) and value.get("type", "session") != "session":
        raise _not_a_header()
    return convert(value, SessionHeader, "session header")  # the header ignores the "type" key


def _not_a_header() -> HarnessError:
    return HarnessError(
        'malformed session header: the first line of a session log must be {"type":"session",…}', "MALFORMED"
    )


def parse_session_header_line(line: str | bytes) -> SessionHeader:
    """A JSONL header line as a session header; ``"type": "session"`` is required."""
    value: Any = decode(line, Any, "session header")
    if not isinstance(value, dict) or value.get("type") != "session":
        raise _not_a_header()
    return parse_session_header(value)


def header_line(header: SessionHeader) -> str:
    """The JSONL header text: ``{"type":"session","version","id","createdAt"``, then the optional fields.

    The optional fields are ``cwd``, ``parentSession`` and ``seedLength``, in that order.
    """
    return '{"type":"session",' + encode(header)[1:].decode()
