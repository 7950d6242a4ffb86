"""dsh.testing.logs: a session log as event types and plain JSON, for readable assertions."""

from __future__ import annotations

from dsh.core.llm import UserSource, text
from dsh.core.session import (
    MessageData,
    MessageTrigger,
    Session,
    TurnStartData,
    TurnStartEvent,
    UserMessageEvent,
)
from dsh.testing.logs import data_json, event_types, log_json


def logged() -> Session:
    session = Session("s")
    session.append(TurnStartEvent, TurnStartData(turn=1, trigger=MessageTrigger(source=UserSource())))
    session.append(UserMessageEvent, MessageData(content=(text("hi"),), source=UserSource()))
    session.append("plugin/note", {"n": 1})
    return session


def test_types_json_and_data_read_a_session_or_a_list_of_events() -> None:
    session = logged()
    assert event_types(session) == ["turn/start", "user/message", "plugin/note"]
    assert event_types(list(session.events)[1:]) == ["user/message", "plugin/note"]
    assert data_json(session, "user/message") == [
        {"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}}
    ]
    assert data_json(session, "plugin/note") == [{"n": 1}]
    assert data_json(session, "turn/end") == []
    first = session.events[0]
    assert log_json(session, skip=("user/message", "plugin/note")) == [
        {
            "type": "turn/start",
            "seq": 0,
            "time": first.time,
            "data": {"turn": 1, "trigger": {"kind": "message", "source": {"kind": "user"}}},
        }
    ]
    assert [entry["seq"] for entry in log_json(session.events)] == [0, 1, 2]
