"""Deriving the model's history from the log (SPEC §3.3).

The log is the truth; messages are a pure function of it. Every message handed out
is a deep copy, so editing a derived message can never change the log or a later
derivation.

:class:`Derivation` is the incremental form a :class:`~dsh.core.session.Session`
keeps: the log is append-only, so the messages derived from a prefix never change and
each call only looks at the events appended since the previous one. The messages
derived so far are kept as private plain copies. Small ones are packed into
``marshal`` blobs of up to :data:`SEGMENT` messages, and a call hands out
``marshal.loads`` of every blob (a C-speed deep copy). A message whose text is large
(more than :data:`LARGE` bytes marshalled, say a long tool output) is kept apart and
copied by walking its containers, which shares its immutable strings instead of
copying their bytes on every call.
"""

from __future__ import annotations

import marshal
from collections.abc import Iterable, Sequence
from typing import Any

from dsh.core.llm.types import ContentBlock, Message, TextBlock, ToolResultBlock
from dsh.core.session.jsonvalue import dumps_json, json_snapshot
from dsh.core.session.types import SessionEvent

SEGMENT = 64
"""How many small derived messages one packed blob holds at most."""

LARGE = 1024
"""Marshalled size (bytes) above which a message is kept apart and copied by a walk."""


def _tagged(tag: str, data: Any) -> Message:
    kind = dumps_json(data["source"]["kind"])
    opening: TextBlock = {"type": "text", "text": f"<{tag} source={kind}>"}
    closing: TextBlock = {"type": "text", "text": f"</{tag}>"}
    return {"role": "user", "content": [opening, *json_snapshot(data["content"]), closing]}


def _tool_result(data: Any) -> Message:
    block: ToolResultBlock = {
        "type": "tool-result",
        "toolCallId": data["callId"],
        "content": json_snapshot(data["content"]),
    }
    if "isError" in data:
        block["isError"] = data["isError"]
    return {"role": "user", "content": [block]}


def derive_message(event: SessionEvent) -> Message | None:
    """The message one event contributes to the history (a fresh plain copy), or None."""
    kind = event["type"]
    if kind == "user/message":
        content: list[ContentBlock] = json_snapshot(event["data"]["content"])
        return {"role": "user", "content": content}
    if kind == "assistant/message":
        content = json_snapshot(event["data"]["content"])
        return {"role": "assistant", "content": content}
    if kind == "tool/result":
        return _tool_result(event["data"])
    if kind == "context/message":
        return _tagged("context", event["data"])
    if kind == "steering/message":
        return _tagged("steering", event["data"])
    return None


INTERRUPTED_NOTE = "[interrupted by the user]"
"""What the model is told of a turn the user aborted before it answered (see :func:`interruption`)."""


def interruption(event: SessionEvent, last_role: str | None) -> Message | None:
    """The note an aborted ``turn/end`` contributes: an assistant message, when the history ends with the user's.

    Without it, the next prompt would follow the aborted one as a second user
    message in a row, with nothing saying the first went unanswered. A turn whose
    partial answer was logged ends with that answer, which needs no note.
    """
    if event["type"] != "turn/end" or last_role != "user" or event["data"]["reason"].get("kind") != "aborted":
        return None
    note: TextBlock = {"type": "text", "text": INTERRUPTED_NOTE}
    return {"role": "assistant", "content": [note]}


def derive_messages(events: Iterable[SessionEvent]) -> list[Message]:
    """Walk ``events`` in order and build the model-facing message list.

    * ``user/message`` → ``{role: "user", content}``
    * ``assistant/message`` → ``{role: "assistant", content}``
    * ``tool/result`` → a user message holding one ``tool-result`` block
      (``toolCallId`` = ``callId``, ``content``, ``isError``; the structured ``error``
      is not shown to the model)
    * ``context/message`` / ``steering/message`` → user content wrapped in
      ``<context source="KIND">`` … ``</context>`` (resp. ``steering``), ``KIND`` being
      ``source.kind`` JSON-encoded
    * ``turn/end`` of an aborted turn whose history ends with a user-role message →
      the assistant note :data:`INTERRUPTED_NOTE` (:func:`interruption`)
    * anything else (boundaries, chunks, usage, errors, unknown types) → nothing.
    """
    messages: list[Message] = []
    for event in events:
        message = derive_message(event) or interruption(event, messages[-1]["role"] if messages else None)
        if message is not None:
            messages.append(message)
    return messages


def _size(message: Any) -> int | None:
    """The marshalled size of ``message``, or None when ``marshal`` cannot hold it.

    ``marshal`` refuses nesting deeper than its own limit, which a JSON value can
    exceed under a raised recursion limit; such a message is kept apart.
    """
    try:
        return len(marshal.dumps(message))
    except ValueError:
        return None


class Derivation:
    """The history derived from a growing log, extended one call at a time.

    Precondition: every call passes the same append-only log (the previous call's
    events, possibly followed by new ones, never edited). :meth:`messages` returns
    a fresh deep copy each time; the caller owns it.
    """

    __slots__ = ("_covered", "_last_role", "_open", "_packed")

    def __init__(self) -> None:
        self._covered = 0
        self._last_role: str | None = None
        self._packed: list[bytes | Message] = []  # a blob of small messages, or one large message
        self._open: list[Message] = []  # small messages not packed yet

    def messages(self, events: Sequence[SessionEvent]) -> list[Message]:
        """The derivation of ``events`` (see :func:`derive_messages`), as a fresh copy."""
        for event in events[self._covered :]:
            message = derive_message(event) or interruption(event, self._last_role)
            if message is not None:
                self._add(message)
                self._last_role = message["role"]
        self._covered = len(events)
        out: list[Message] = []
        for segment in self._packed:
            if type(segment) is bytes:
                out += marshal.loads(segment)
            else:
                out.append(json_snapshot(segment))  # type: ignore[arg-type]
        if self._open:
            out += marshal.loads(marshal.dumps(self._open))
        return out

    def _add(self, message: Message) -> None:
        size = _size(message)
        if size is None or size > LARGE:
            self._seal()
            self._packed.append(message)
            return
        self._open.append(message)
        if len(self._open) == SEGMENT:
            self._seal()

    def _seal(self) -> None:
        if self._open:
            self._packed.append(marshal.dumps(self._open))
            self._open = []
