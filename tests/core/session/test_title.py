"""A session's title is its first user prompt on one line, from the log alone."""

from __future__ import annotations

from dsh.core.llm import UserSource, text
from dsh.core.session import Session, session_title


def test_the_title_is_the_first_user_prompt_with_whitespace_collapsed() -> None:
    session = Session("s")
    assert session_title(session.events) is None
    session.append("turn/start", {"turn": 1, "trigger": {"kind": "message", "source": UserSource()}})
    session.append("user/message", {"content": [text("  fix\n the   bug ")], "source": UserSource()})
    session.append("user/message", {"content": [text("later")], "source": UserSource()})
    assert session_title(session.events) == "fix the bug"


def test_a_prompt_without_text_has_no_title() -> None:
    session = Session("s")
    session.append("user/message", {"content": [text("   ")], "source": UserSource()})
    assert session_title(session.events) is None
