"""Session log lines in and out, checked in one pass (SPEC §3.1, §4b).

:func:`parse_session_event_line` decodes one JSONL line into its event class, which
validates it; :func:`session_event_line` writes an event back as that exact line.
An event type no registered class defines becomes an :class:`UntypedEvent` (its
envelope checked, its ``data`` any JSON); unknown variants nested in a known event
are kept as ``Unknown`` (see :mod:`dsh.core.llm.codec`). Either way the line is
written back unchanged, never dropped (SPEC §0.6).

Plugins that log events of their own make them typed with
:func:`register_event_type`: the class is decoded like the core ones until the
returned disposer runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from dsh.core.errors import HarnessError
from dsh.core.llm.codec import convert, decode, encode
from dsh.core.session.types import CORE_EVENT_TYPES, SessionEvent, SessionEventBase, SessionHeader, UntypedEvent

_HINT = "(a logged event is {type: str, seq: int >= 0, time: int >= 0, data}; see SPEC §3.1 for each type's data)"


class _Registry:
    """The event classes the decoder knows, by type; rebuilt when a plugin adds or removes one."""

    def __init__(self) -> None:
        self.classes: dict[str, type[SessionEventBase]] = {cls.__struct_config__.tag: cls for cls in CORE_EVENT_TYPES}  # type: ignore[misc]
        self.counts: dict[str, int] = {}
        self._rebuild()

    def _rebuild(self) -> None:
        union: Any = None
        for cls in self.classes.values():
            union = cls if union is None else union | cls
        self.union = union
        self.decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(union)

    def add(self, cls: type[SessionEventBase]) -> Callable[[], None]:
        tag = cls.__struct_config__.tag
        if not isinstance(tag, str) or not issubclass(cls, SessionEventBase):
            raise HarnessError(
                f"{cls.__qualname__} is no event class: subclass SessionEventBase with tag=<event type>",
                "INVALID_EVENT_TYPE",
            )
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
        return _registry.decoder.decode(line)  # type: ignore[no-any-return]
    except msgspec.ValidationError as error:
        try:
            value = msgspec.json.decode(line)
        except msgspec.DecodeError:  # pragma: no cover - the typed decoder reports bad JSON first
            raise HarnessError(f"malformed session event: {error}", "MALFORMED", cause=error) from error
        return parse_session_event(value)
    except msgspec.DecodeError as error:
        raise HarnessError(f"malformed session event: not valid JSON ({error})", "MALFORMED", cause=error) from error


def session_event_line(event: SessionEvent) -> str:
    """The JSONL text of ``event`` (compact, key order ``type, seq, time, data``), no newline."""
    return encode(event).decode()


def parse_session_header(value: object) -> SessionHeader:
    """``value`` as a session header (a ``"type": "session"`` key allowed), or raise MALFORMED."""
    if isinstance(value, dict) and "type" in value:
        if value["type"] != "session":
            raise _not_a_header()
        value = {key: item for key, item in value.items() if key != "type"}
    return convert(value, SessionHeader, "session header")


def _not_a_header() -> HarnessError:
    return HarnessError(
        'malformed session header: the first line of a session log must be {"type":"session",…}', "MALFORMED"
    )


def parse_session_header_line(line: str | bytes) -> SessionHeader:
    """A JSONL header line as a session header; ``"type": "session"`` is required."""
    value = decode(line, Any, "session header")
    if not isinstance(value, dict) or value.get("type") != "session":
        raise _not_a_header()
    return parse_session_header(value)


def header_line(header: SessionHeader) -> str:
    """The JSONL header text ``{"type":"session","version","id","createdAt"[,"cwd"][,"parentSession"]}``."""
    return '{"type":"session",' + encode(header)[1:].decode()
