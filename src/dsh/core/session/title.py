"""A session's title: its first user prompt, on one line (no model request).

Shared by every surface that names sessions (``dsh sessions list``, ACP
``session/list``), so they agree on what a title is.
"""

from __future__ import annotations

from collections.abc import Iterable

from dsh.core.llm.types import text_of
from dsh.core.session.types import SessionEvent, UserMessageEvent


def prompt_title(event: UserMessageEvent) -> str | None:
    """The text of ``event`` with its whitespace runs collapsed to one space; None when it has no text."""
    return " ".join(text_of(event.data.content).split()) or None


def session_title(events: Iterable[SessionEvent]) -> str | None:
    """The title of the first ``user/message`` in ``events`` (:func:`prompt_title`); None when there is none."""
    for event in events:
        if type(event) is UserMessageEvent:
            return prompt_title(event)
    return None
