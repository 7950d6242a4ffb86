"""Deriving the model's history from the log (SPEC §3.3).

The log is the truth; messages are a pure function of it. Every content list is
deep-copied, so editing a derived message can never change the log.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dsh.core.llm.types import ContentBlock, Message, TextBlock, ToolResultBlock
from dsh.core.session.jsonvalue import dumps_json, json_snapshot
from dsh.core.session.types import SessionEvent


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
    * anything else (boundaries, chunks, usage, errors, unknown types) → nothing.
    """
    messages: list[Message] = []
    for event in events:
        kind = event["type"]
        if kind == "user/message":
            content: list[ContentBlock] = json_snapshot(event["data"]["content"])
            messages.append({"role": "user", "content": content})
        elif kind == "assistant/message":
            content = json_snapshot(event["data"]["content"])
            messages.append({"role": "assistant", "content": content})
        elif kind == "tool/result":
            messages.append(_tool_result(event["data"]))
        elif kind == "context/message":
            messages.append(_tagged("context", event["data"]))
        elif kind == "steering/message":
            messages.append(_tagged("steering", event["data"]))
    return messages
