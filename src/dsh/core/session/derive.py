"""Deriving the model's history from the log (SPEC §3.3).

The log is the truth; messages are a pure function of it. Values are immutable, so
a derived message shares the logged content (``message.content is
event.data.content`` for a user or assistant message): nothing is copied.

:class:`Derivation` is the incremental form a :class:`~dsh.core.session.Session`
keeps: the log is append-only, so the messages derived from a prefix never change and
each call only looks at the events appended since the previous one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec

from dsh.core.llm.codec import encode
from dsh.core.llm.types import Message, MessageSource, TextBlock, ToolResultBlock
from dsh.core.session.types import (
    AbortedReason,
    AssistantMessageEvent,
    ContextMessageEvent,
    MessageData,
    SessionEvent,
    SteeringMessageData,
    SteeringMessageEvent,
    ToolResultEvent,
    TurnEndEvent,
    UserMessageEvent,
)


def _source_kind(source: MessageSource) -> object:
    """The ``kind`` of a message source, known or ``Unknown`` (None when it has none)."""
    if isinstance(source, msgspec.Struct):
        return source.__struct_config__.tag
    plain = msgspec.json.decode(source)
    return plain.get("kind") if isinstance(plain, dict) else None


def _tagged(tag: str, data: MessageData | SteeringMessageData) -> Message:
    kind = encode(_source_kind(data.source)).decode()
    return Message(
        role="user",
        content=(TextBlock(text=f"<{tag} source={kind}>"), *data.content, TextBlock(text=f"</{tag}>")),
    )


def _user(event: UserMessageEvent) -> Message:
    return Message(role="user", content=event.data.content)


def _assistant(event: AssistantMessageEvent) -> Message:
    return Message(role="assistant", content=event.data.content)


def _tool_result(event: ToolResultEvent) -> Message:
    data = event.data
    block = ToolResultBlock(tool_call_id=data.call_id, content=data.content, is_error=data.is_error)
    return Message(role="user", content=(block,))


def _context(event: ContextMessageEvent) -> Message:
    return _tagged("context", event.data)


def _steering(event: SteeringMessageEvent) -> Message:
    return _tagged("steering", event.data)


_DERIVERS: dict[type[Any], Callable[[Any], Message]] = {
    UserMessageEvent: _user,
    AssistantMessageEvent: _assistant,
    ToolResultEvent: _tool_result,
    ContextMessageEvent: _context,
    SteeringMessageEvent: _steering,
}


def derive_message(event: SessionEvent) -> Message | None:
    """The message one event contributes to the history, or None (its content is the logged value)."""
    derive = _DERIVERS.get(type(event))
    return None if derive is None else derive(event)


INTERRUPTED_NOTE = "[interrupted by the user]"
"""What the model is told of a turn the user aborted before it answered (see :func:`interruption`)."""

_NOTE = Message(role="assistant", content=(TextBlock(text=INTERRUPTED_NOTE),))


def interruption(event: SessionEvent, last_role: str | None) -> Message | None:
    """The note an aborted ``turn/end`` contributes: an assistant message, when the history ends with the user's.

    Without it, the next prompt would follow the aborted one as a second user
    message in a row, with nothing saying the first went unanswered. A turn whose
    partial answer was logged ends with that answer, which needs no note.
    """
    if type(event) is TurnEndEvent and last_role == "user" and type(event.data.reason) is AbortedReason:
        return _NOTE
    return None


def derive_messages(events: Iterable[SessionEvent]) -> list[Message]:
    """Walk ``events`` in order and build the model-facing message list.

    * ``user/message`` → ``Message(role="user", content)``
    * ``assistant/message`` → ``Message(role="assistant", content)``
    * ``tool/result`` → a user message holding one ``tool-result`` block
      (``tool_call_id`` = ``call_id``, ``content``, ``is_error``; the structured
      ``error`` is not shown to the model)
    * ``context/message`` / ``steering/message`` → user content wrapped in
      ``<context source="KIND">`` … ``</context>`` (resp. ``steering``), ``KIND`` being
      ``source.kind`` JSON-encoded
    * ``turn/end`` of an aborted turn whose history ends with a user-role message →
      the assistant note :data:`INTERRUPTED_NOTE` (:func:`interruption`)
    * anything else (boundaries, chunks, usage, errors, unknown types) → nothing.
    """
    messages: list[Message] = []
    _extend(messages, events)
    return messages


def _extend(messages: list[Message], events: Iterable[SessionEvent]) -> None:
    derivers = _DERIVERS
    for event in events:
        derive = derivers.get(type(event))
        if derive is not None:
            messages.append(derive(event))
        elif type(event) is TurnEndEvent:
            note = interruption(event, messages[-1].role if messages else None)
            if note is not None:
                messages.append(note)


class Derivation:
    """The history derived from a growing log, extended one call at a time.

    Precondition: every call passes the same append-only log (the previous call's
    events, possibly followed by new ones, never edited). :meth:`messages` returns a
    new list each time (the caller owns the list; the messages are shared values).
    """

    __slots__ = ("_covered", "_messages")

    def __init__(self) -> None:
        self._covered = 0
        self._messages: list[Message] = []

    def messages(self, events: Sequence[SessionEvent]) -> list[Message]:
        """The derivation of ``events`` (see :func:`derive_messages`)."""
        covered = self._covered
        if covered < len(events):
            _extend(self._messages, events[covered:])
            self._covered = len(events)
        return self._messages.copy()
