"""Deriving the model's history from the log (SPEC §3.3).

The log is the truth; messages are a pure function of it. Values are immutable, so
a derived message shares the logged content (``message.content is
event.data.content`` for a user or assistant message): nothing is copied.

:class:`Derivation` is the incremental form a :class:`~dsh.core.session.Session`
keeps: the log is append-only, so the messages derived from a prefix never change and
each call only looks at the events appended since the previous one.

A ``compaction`` event changes what the model sees from that event on: its summary
replaces the events before its ``kept_from``, and its pruned tool results replace the
logged ones (see :func:`derive_messages`). The log keeps every original event, so a
resumed, forked or replayed session derives the same history as the live one. A log
without compaction events is derived exactly as before: the walk only meets the
compaction case when one is logged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec
from msgspec import UNSET

from dsh.core.llm.codec import encode
from dsh.core.llm.types import ContentBlock, Message, MessageSource, TextBlock, ToolResultBlock
from dsh.core.session.types import (
    AbortedReason,
    AssistantMessageEvent,
    CompactionEvent,
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


def _pruned_result(event: ToolResultEvent, content: tuple[ContentBlock, ...]) -> Message:
    data = event.data
    block = ToolResultBlock(tool_call_id=data.call_id, content=content, is_error=data.is_error)
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
    * ``compaction`` (without ``error``) → the history is rebuilt: the ``summary`` as
      one user text message (when it has one), then the events from ``kept_from``
      (the previous compaction's, when it names none) up to the compaction, each
      tool result named in ``pruned`` (by this compaction or an earlier one) with
      the pruned content; the events after it follow as usual
    * anything else (boundaries, chunks, usage, errors, unknown types) → nothing.

    Precondition: ``events[i].seq == i`` (a session log, or a prefix of one), since a
    compaction names events by seq.
    """
    return Derivation().messages(events if isinstance(events, Sequence) else list(events))


class _CompactedError(Exception):
    """Raised by the walk at a ``compaction`` event (zero cost for the events without one)."""

    def __init__(self, event: CompactionEvent) -> None:
        self.event = event


def _stop(event: CompactionEvent) -> Message:
    raise _CompactedError(event)


_WALK: dict[type[Any], Callable[[Any], Message]] = {**_DERIVERS, CompactionEvent: _stop}


def _extend(messages: list[Message], events: Iterable[SessionEvent]) -> None:
    """Derive ``events`` onto ``messages``; raises :class:`_CompactedError` at a compaction event."""
    derivers = _WALK
    for event in events:
        derive = derivers.get(type(event))
        if derive is not None:
            messages.append(derive(event))
        elif type(event) is TurnEndEvent:
            note = interruption(event, messages[-1].role if messages else None)
            if note is not None:
                messages.append(note)


def _extend_pruned(
    messages: list[Message], events: Iterable[SessionEvent], pruned: dict[int, tuple[ContentBlock, ...]]
) -> None:
    """Like :func:`_extend`, with ``pruned`` tool results shortened; earlier compactions are passed over."""
    derivers = _DERIVERS
    for event in events:
        if type(event) is ToolResultEvent and event.seq in pruned:
            messages.append(_pruned_result(event, pruned[event.seq]))
            continue
        kind = type(event)
        derive = derivers.get(kind)
        if derive is not None:
            messages.append(derive(event))
        elif kind is TurnEndEvent:
            note = interruption(event, messages[-1].role if messages else None)
            if note is not None:
                messages.append(note)


class Derivation:
    """The history derived from a growing log, extended one call at a time.

    Precondition: every call passes the same append-only log (the previous call's
    events, possibly followed by new ones, never edited). :meth:`messages` returns a
    new list each time (the caller owns the list; the messages are shared values).
    """

    __slots__ = ("_covered", "_head", "_kept_from", "_messages", "_pruned")

    def __init__(self) -> None:
        self._covered = 0
        self._messages: list[Message] = []
        self._head: Message | None = None  # the summary of the last compaction with one
        self._kept_from = 0
        self._pruned: dict[int, tuple[ContentBlock, ...]] = {}

    def messages(self, events: Sequence[SessionEvent]) -> list[Message]:
        """The derivation of ``events`` (see :func:`derive_messages`)."""
        covered = self._covered
        end = len(events)
        while covered < end:
            try:
                _extend(self._messages, events[covered:] if covered else events)
            except _CompactedError as stop:
                covered = stop.event.seq + 1
                self._compact(stop.event, events)
                continue
            break
        self._covered = end
        return self._messages.copy()

    def _compact(self, event: CompactionEvent, events: Sequence[SessionEvent]) -> None:
        """Rebuild the history as ``event`` says (a failed attempt changes nothing)."""
        data = event.data
        if data.error is not UNSET:
            return
        pruned = self._pruned
        for entry in data.pruned:
            pruned[entry.original_seq] = entry.content
        if data.summary is not UNSET:
            self._head = Message(role="user", content=(TextBlock(text=data.summary),))
            self._kept_from = event.seq if data.kept_from is UNSET else data.kept_from
        elif data.kept_from is not UNSET:
            self._kept_from = data.kept_from
        messages = [] if self._head is None else [self._head]
        _extend_pruned(messages, events[self._kept_from : event.seq], pruned)
        self._messages = messages
