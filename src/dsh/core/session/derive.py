"""Deriving the model's history from the log (SPEC §3.3).

The log is the truth; messages are a pure function of it. Values are immutable, so
the derived messages share the logged blocks: nothing is copied.

:class:`Derivation` is the incremental form a :class:`~dsh.core.session.Session`
keeps: the log is append-only, so the messages derived from a prefix never change and
each call only looks at the events appended since the previous one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dsh.core.llm.codec import encode, variant_tag
from dsh.core.llm.types import Message, TextBlock, ToolResultBlock
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


def _tagged(tag: str, data: MessageData | SteeringMessageData) -> Message:
    kind = encode(variant_tag(data.source)).decode()
    return Message(
        role="user",
        content=(TextBlock(text=f"<{tag} source={kind}>"), *data.content, TextBlock(text=f"</{tag}>")),
    )


def derive_message(event: SessionEvent) -> Message | None:
    """The message one event contributes to the history, or None."""
    kind = type(event)
    if kind is UserMessageEvent:
        return Message(role="user", content=event.data.content)  # type: ignore[union-attr]
    if kind is AssistantMessageEvent:
        return Message(role="assistant", content=event.data.content)  # type: ignore[union-attr]
    if kind is ToolResultEvent:
        data = event.data  # type: ignore[union-attr]
        block = ToolResultBlock(tool_call_id=data.call_id, content=data.content, is_error=data.is_error)
        return Message(role="user", content=(block,))
    if kind is ContextMessageEvent:
        return _tagged("context", event.data)  # type: ignore[union-attr]
    if kind is SteeringMessageEvent:
        return _tagged("steering", event.data)  # type: ignore[union-attr]
    return None


INTERRUPTED_NOTE = "[interrupted by the user]"
"""What the model is told of a turn the user aborted before it answered (see :func:`interruption`)."""

_NOTE = Message(role="assistant", content=(TextBlock(text=INTERRUPTED_NOTE),))


def interruption(event: SessionEvent, last_role: str | None) -> Message | None:
    """The note an aborted ``turn/end`` contributes: an assistant message, when the history ends with the user's.

    Without it, the next prompt would follow the aborted one as a second user
    message in a row, with nothing saying the first went unanswered. A turn whose
    partial answer was logged ends with that answer, which needs no note.
    """
    if type(event) is not TurnEndEvent or last_role != "user" or type(event.data.reason) is not AbortedReason:
        return None
    return _NOTE


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
    for event in events:
        message = derive_message(event) or interruption(event, messages[-1].role if messages else None)
        if message is not None:
            messages.append(message)
    return messages


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
        derived = self._messages
        for event in events[self._covered :]:
            message = derive_message(event) or interruption(event, derived[-1].role if derived else None)
            if message is not None:
                derived.append(message)
        self._covered = len(events)
        return derived.copy()
