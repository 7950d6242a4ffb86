"""A sub-agent's progress inside its parent's tool card.

While a child agent runs, the ``subagent`` plugin reports each of its tool calls and
assistant messages as ``subagent/progress`` on the parent. For a parent this bridge
owns, each report becomes a ``tool_call_update`` of the parent's call that started
the child: status ``in_progress`` and, as the card's content, the child's latest
step (``sub-agent <task>: <title or text>``). The call's own result, when it comes,
replaces that content as any tool result does. Reports without a parent call, or for
agents of no session here, are ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from msgspec import UNSET

from dsh.core.agent import Agent
from dsh.core.subagent import SubagentProgress

PREVIEW_CHARS = 400
"""How much of a child's message a card shows."""


def progress_update(session_id: str, progress: SubagentProgress) -> dict[str, Any] | None:
    """The ``session/update`` params showing ``progress`` in its parent call's card, or None without a call."""
    if progress.call_id is UNSET:
        return None
    step = progress.title if progress.kind == "tool" else progress.text
    if len(step) > PREVIEW_CHARS:
        step = step[:PREVIEW_CHARS] + "…"
    return {
        "sessionId": session_id,
        "update": {
            "sessionUpdate": "tool_call_update",
            "toolCallId": progress.call_id,
            "status": "in_progress",
            "content": [
                {"type": "content", "content": {"type": "text", "text": f"sub-agent {progress.task_id}: {step}"}}
            ],
        },
    }


def child_progress_listener(
    session_of: Callable[[object], str | None], notify: Callable[[dict[str, Any]], None]
) -> Callable[[Agent, SubagentProgress], None]:
    """The ``subagent/progress`` listener: notify the client of the session that owns the parent."""

    def on_progress(parent: Agent, progress: SubagentProgress) -> None:
        session_id = session_of(parent)
        if session_id is None:
            return
        update = progress_update(session_id, progress)
        if update is not None:
            notify(update)

    return on_progress
