"""Session (SPEC §3.3, tests of §3.7 describe "Session")."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from dsh.core.errors import HarnessError
from dsh.core.llm import (
    UNSET,
    Message,
    PluginSource,
    TextBlock,
    TextDeltaChunk,
    ToolCallBlock,
    ToolResultBlock,
    UserSource,
    text,
    to_json,
)
from dsh.core.session import (
    AssistantChunkData,
    AssistantChunkEvent,
    AssistantMessageData,
    AssistantMessageEvent,
    EventLog,
    MaxTokensReason,
    MessageData,
    MessageTrigger,
    NotJsonError,
    Session,
    SessionEvent,
    SessionEventBase,
    SessionHeader,
    StepData,
    StepStartEvent,
    ToolCallData,
    ToolCallEvent,
    TurnEndEvent,
    TurnStartData,
    TurnStartEvent,
    UntypedEvent,
    UserMessageEvent,
    derive_messages,
    is_turn_open,
    last_turn_number,
)
from dsh.core.session.derive import derive_message
from tests.core.session.conftest import PinnedClock
from tests.core.session.helpers import (
    assistant_message,
    log,
    one_turn_log,
    step,
    tool_call_block,
    tool_result,
    turn_end,
    turn_start,
    user_message,
)
from tests.core.session.helpers import (
    text as text_json,
)


def _chat(session: Session) -> None:
    session.append("turn/start", turn_start(1))
    session.append("user/message", user_message("hi"))
    session.append("step/start", step(1, 1))
    session.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "x"}})
    session.append("assistant/message", assistant_message(1, 1, tool_call_block("c1", "read", '{"p":1}')))
    session.append("tool/call", {"turn": 1, "step": 1, "callId": "c1", "name": "read", "arguments": '{"p":1}'})
    session.append("tool/result", tool_result(1, 1, "c1", "file body"))
    session.append("step/end", step(1, 1))
    session.append("turn/end", turn_end(1))


# ------------------------------------------------------------- SPEC §3.7 titles
def test_derives_message_history_from_the_event_log() -> None:
    """derives message history from the event log"""
    session = Session("s")
    _chat(session)
    messages = session.derive_messages()
    assert [message.role for message in messages] == ["user", "assistant", "user"]
    assert messages[0].content == (text("hi"),)
    assert messages[1].content == (ToolCallBlock(id="c1", name="read", arguments='{"p":1}'),)
    assert messages[2].content == (ToolResultBlock(tool_call_id="c1", content=(text("file body"),), is_error=False),)
    assert to_json(messages[2].content) == [
        {"type": "tool-result", "toolCallId": "c1", "content": [text_json("file body")], "isError": False}
    ]


def test_accepts_and_round_trips_a_max_tokens_turn_end_reason() -> None:
    """accepts and round-trips a max-tokens turn/end reason"""
    session = Session("s")
    logged = session.append("turn/end", {"turn": 1, "reason": {"kind": "max-tokens"}})
    assert type(logged) is TurnEndEvent
    assert logged.data.reason == MaxTokensReason()
    replayed = Session("s2", list(session.events))
    assert to_json(replayed.events[0])["data"]["reason"] == {"kind": "max-tokens"}


def test_renders_context_and_steering_messages_as_tagged_synthetic_user_content() -> None:
    """renders context and steering messages as tagged synthetic user content"""
    session = Session("s")
    session.append("context/message", {"content": [text_json("ctx body")], "source": {"kind": "plugin", "plugin": "p"}})
    session.append("steering/message", {"turn": 1, "content": [text_json("steer")], "source": {"kind": "user"}})
    assert to_json(session.derive_messages()) == [
        {
            "role": "user",
            "content": [text_json('<context source="plugin">'), text_json("ctx body"), text_json("</context>")],
        },
        {
            "role": "user",
            "content": [text_json('<steering source="user">'), text_json("steer"), text_json("</steering>")],
        },
    ]


def test_replays_identically_from_a_seeded_event_log() -> None:
    """replays identically from a seeded event log"""
    original = Session("s")
    _chat(original)
    replayed = Session("s", list(original.events))
    assert replayed.derive_messages() == original.derive_messages()
    assert replayed.seq == original.seq == 9


def test_derived_messages_are_immutable_and_share_the_logged_content() -> None:
    """isolates the log from mutation through a derived message (append-only contract)

    The values are immutable, so the contract holds without copies: a derived
    message shares the logged content, and neither can be changed.
    """
    session = Session("s")
    _chat(session)
    messages = session.derive_messages()
    user = session.events[1]
    assert type(user) is UserMessageEvent
    assert messages[0].content is user.data.content
    with pytest.raises(AttributeError):
        messages[0].content = ()  # type: ignore[misc]
    with pytest.raises(AttributeError):
        messages[0].content[0].text = "mutated"  # type: ignore[union-attr]
    with pytest.raises(TypeError):
        messages[0].content[0] = text("extra")  # type: ignore[index]
    messages.append(Message(role="user", content=()))  # the list is the caller's
    assert len(session.derive_messages()) == 3


def test_rejects_non_json_serializable_event_data_at_the_source_incl_sparse_arrays() -> None:
    """rejects non-JSON-serializable event data at the source (incl. sparse arrays)

    JS cases mapped to Python: bigint → tuple, function → lambda, symbol → object(),
    Map → set, undefined → a None key, Infinity → float("inf"), sparse array → bytes
    (Python lists cannot have holes), dense-with-bigint → a list holding a tuple,
    nested function, cyclic. An untyped event's data is checked as JSON; a known
    type's data must fit its payload (MALFORMED otherwise).
    """
    cyclic: dict[str, Any] = {}
    cyclic["me"] = cyclic
    bad_values: list[Any] = [
        (1,),
        lambda: None,
        object(),
        {1, 2},
        {None: 1},
        float("inf"),
        float("nan"),
        b"\x00\x01",
        [1, 2, (3,)],
        {"nested": {"fn": print}},
        cyclic,
    ]
    session = Session("s")
    for value in bad_values:
        with pytest.raises(NotJsonError, match='session event "plugin/note" carries non-JSON-serializable data'):
            session.append("plugin/note", {"content": value, "source": {"kind": "user"}})
        with pytest.raises(HarnessError, match='malformed "user/message" event data') as caught:
            session.append("user/message", {"content": value, "source": {"kind": "user"}})
        assert caught.value.code == "MALFORMED"
    assert len(session.events) == 0
    assert session.seq == 0


def test_accepts_dense_arrays_and_nested_plain_objects() -> None:
    """accepts dense arrays and nested plain objects"""
    session = Session("s")
    data = {"list": [1, 2, [3, {"deep": [None, True, 1.5, "x"]}]], "obj": {"a": {"b": {}}}}
    logged = session.append("custom/data", data)
    assert logged == UntypedEvent(type="custom/data", seq=0, time=logged.time, data=data)
    assert logged.data is data  # the log takes it over
    assert session.seq == 1


def test_validates_seed_events_rejects_a_value_that_is_no_event() -> None:
    """validates seed events: rejects a seed item that is not an event value (a dict, say)"""
    seed: list[Any] = [
        TurnStartEvent(seq=0, time=0, data=TurnStartData(turn=1, trigger=MessageTrigger(source=UserSource()))),
        {"type": "user/message", "seq": 1, "time": 0, "data": user_message("x")},
    ]
    with pytest.raises(HarnessError, match=r"seed event at index 1 is not a session event \(got dict\)") as caught:
        Session("s", seed)
    assert caught.value.code == "INVALID_SEED"
    assert "parse_session_event" in str(caught.value)


def test_validates_seed_events_rejects_a_non_contiguous_seq() -> None:
    """validates seed events: rejects a non-contiguous seq"""
    seed = log(("turn/start", turn_start(1)), ("user/message", user_message("x")), start=0)
    seed[1] = log(("user/message", user_message("x")), start=2)[0]
    with pytest.raises(HarnessError) as caught:
        Session("s", seed)
    assert str(caught.value) == "seed event at index 1 has seq 2 (expected 1); seed must be contiguous from 0"
    assert caught.value.code == "INVALID_SEED"


def test_accepts_a_well_formed_contiguous_serializable_seed() -> None:
    """accepts a well-formed contiguous serializable seed"""
    seed = one_turn_log()
    session = Session("s", seed)
    assert list(session.events) == seed
    assert session.seq == 6
    assert session.derive_messages() == [
        Message(role="user", content=(text("hi"),)),
        Message(role="assistant", content=(text("hello"),)),
    ]


def test_the_seed_is_shared_not_copied_and_later_changes_to_the_list_do_not_reach_the_log() -> None:
    """snapshots the seed: changing the caller's list after construction does not affect session.events

    The events themselves are immutable and shared (no copy); only the list is the log's own.
    """
    seed = one_turn_log()
    session = Session("s", seed)
    assert session.events[1] is seed[1]
    seed.append(log(("user/message", user_message("late")), start=6)[0])
    seed[0] = seed[1]
    assert session.seq == 6
    assert type(session.events[0]) is TurnStartEvent
    with pytest.raises(AttributeError):
        session.events[1].seq = 9  # type: ignore[misc]


def test_append_converts_json_data_once_and_the_caller_keeps_its_object() -> None:
    """snapshots append data: mutating the passed object after append does not affect session.events"""
    session = Session("s")
    data = user_message("original")
    returned = session.append("user/message", data)
    data["content"][0]["text"] = "MUTATED"
    data["content"].append(text_json("more"))
    assert type(returned) is UserMessageEvent
    assert returned.data.content == (text("original"),)
    assert returned is session.events[0]


# ------------------------------------------------------------ append, both forms
def test_append_a_typed_event_returns_the_logged_value(pinned_clock: PinnedClock) -> None:
    session = Session("s")
    data = ToolCallData(turn=1, step=2, call_id="c1", name="read", arguments="{}")
    logged = session.append(ToolCallEvent, data)
    assert logged == ToolCallEvent(seq=0, time=1_000, data=data)
    assert logged.data is data
    assert logged.data.call_id == "c1"
    assert logged.type == "tool/call"
    assert session.events[0] is logged
    chunk = session.append(
        AssistantChunkEvent, AssistantChunkData(turn=1, step=2, chunk=TextDeltaChunk(index=0, text="x"))
    )
    assert chunk.seq == 1
    assert to_json(chunk) == {
        "type": "assistant/chunk",
        "seq": 1,
        "time": 1_000,
        "data": {"turn": 1, "step": 2, "chunk": {"type": "text-delta", "index": 0, "text": "x"}},
    }


def test_append_a_typed_event_refuses_the_wrong_payload() -> None:
    session = Session("s")
    with pytest.raises(HarnessError) as caught:
        session.append(ToolCallEvent, StepData(turn=1, step=1))
    assert caught.value.code == "INVALID_EVENT_DATA"
    assert str(caught.value) == (
        "ToolCallEvent carries ToolCallData, got StepData: append(ToolCallEvent, ToolCallData(...))"
    )
    with pytest.raises(HarnessError, match="carries StepData, got dict"):
        session.append(StepStartEvent, {"turn": 1, "step": 1})
    assert session.seq == 0


def test_append_refuses_what_is_neither_an_event_class_nor_a_type_name() -> None:
    session = Session("s")
    for kind in (5, StepData, Message):
        with pytest.raises(HarnessError) as caught:
            session.append(kind, None)  # type: ignore[call-overload]
        assert caught.value.code == "INVALID_EVENT_TYPE"
    assert "got int" in _message(session, 5)
    assert session.seq == 0


def _message(session: Session, kind: object) -> str:
    with pytest.raises(HarnessError) as caught:
        session.append(kind, None)  # type: ignore[call-overload]
    return str(caught.value)


def test_append_a_known_type_by_name_validates_its_json_data() -> None:
    session = Session("s")
    with pytest.raises(HarnessError) as caught:
        session.append("tool/call", {"turn": 1, "step": 1, "callId": "c", "name": "n"})
    assert str(caught.value) == ('malformed "tool/call" event data: Object missing required field `arguments` - at `$`')
    with pytest.raises(HarnessError, match=r"Expected `int`, got `str` - at `\$.turn`"):
        session.append("step/start", {"turn": "1", "step": 1})
    with pytest.raises(HarnessError, match=r"Expected `int`, got `bool` - at `\$.step`"):
        session.append("step/start", {"turn": 1, "step": True})
    with pytest.raises(HarnessError, match=r"Expected `int` >= 0 - at `\$.turn`"):
        session.append("step/start", {"turn": -1, "step": 1})
    assert session.seq == 0
    logged = session.append("step/start", {"turn": 1, "step": 1})
    assert logged == StepStartEvent(seq=0, time=logged.time, data=StepData(turn=1, step=1))


def test_append_by_name_takes_typed_values_inside_the_json() -> None:
    session = Session("s")
    logged = session.append("user/message", {"content": [text("a")], "source": UserSource()})
    assert logged == UserMessageEvent(
        seq=0, time=logged.time, data=MessageData(content=(text("a"),), source=UserSource())
    )
    data = MessageData(content=(text("b"),), source=PluginSource(plugin="p"))
    assert session.append("context/message", data).data is data


# ----------------------------------------------------------------- the envelope
def test_append_builds_the_envelope_in_wire_key_order_with_clock_time(pinned_clock: PinnedClock) -> None:
    session = Session("s")
    first = session.append("user/message", user_message("a"))
    pinned_clock.tick(5)
    second = session.append("custom/type", None)
    assert list(to_json(first)) == ["type", "seq", "time", "data"]
    assert to_json(first) == {"type": "user/message", "seq": 0, "time": 1_000, "data": user_message("a")}
    assert second == UntypedEvent(type="custom/type", seq=1, time=1_005, data=None)
    assert msgspec.json.encode(second) == b'{"type":"custom/type","seq":1,"time":1005,"data":null}'
    assert type(second.time) is int


def test_the_real_clock_yields_integer_milliseconds() -> None:
    session = Session("s")
    logged = session.append("x", 1)
    assert type(logged.time) is int
    assert logged.time > 1_600_000_000_000
    assert type(session.header.created_at) is int


def test_on_append_runs_after_the_push_and_a_raising_hook_propagates() -> None:
    session = Session("s")
    seen: list[tuple[Session, SessionEvent, int]] = []

    def hook(target: Session, logged: SessionEvent) -> None:
        seen.append((target, logged, target.seq))
        if logged.type == "boom":
            raise RuntimeError("listener failed")

    session.on_append = hook
    first = session.append("ok", 1)
    with pytest.raises(RuntimeError, match="listener failed"):
        session.append("boom", 2)
    assert [logged.type for logged in session.events] == ["ok", "boom"]
    assert seen[0] == (session, first, 1)
    assert seen[1][2] == 2


def test_seeding_does_not_call_on_append() -> None:
    calls: list[SessionEvent] = []
    session = Session("s", one_turn_log())
    session.on_append = lambda _session, logged: calls.append(logged)
    assert calls == []
    session.append("user/message", user_message("next"))
    assert [logged.seq for logged in calls] == [6]


@pytest.mark.parametrize("bad", ["not an event", {"type": "x", "seq": 0, "time": 0, "data": None}, None, 5])
def test_rejects_a_seed_item_that_is_not_an_event_value(bad: Any) -> None:
    with pytest.raises(HarnessError, match="seed event at index 0 is not a session event") as caught:
        Session("s", [bad])
    assert caught.value.code == "INVALID_SEED"


def test_an_untyped_seed_event_is_kept_as_it_is() -> None:
    untyped = UntypedEvent(type="plugin/x", seq=0, time=5, data={"k": 1})
    session = Session("s", [untyped])
    assert session.events[0] is untyped


def test_header_is_the_given_immutable_value() -> None:
    header = SessionHeader(version=1, id="s", created_at=7, cwd="/w")
    session = Session("s", header=header)
    assert session.header is header
    assert session.header.parent_session is UNSET
    assert session.id == "s"
    assert repr(session) == "<Session 's' seq=0>"


def test_the_default_header_is_version_one_now(pinned_clock: PinnedClock) -> None:
    assert Session("s").header == SessionHeader(version=1, id="s", created_at=1_000)


# ------------------------------------------------------------------ events view
def test_events_is_a_read_only_live_view() -> None:
    session = Session("s")
    view = session.events
    assert session.events is view
    assert isinstance(view, EventLog)
    assert len(view) == 0
    first = session.append("a", 1)
    second = session.append("b", 2)
    assert len(view) == 2
    assert view[0] is first
    assert view[-1] is second
    assert view[0:1] == [first]
    assert list(view) == [first, second]
    assert list(reversed(view)) == [second, first]
    assert first in view
    assert view.index(second) == 1
    assert not hasattr(view, "append")
    with pytest.raises(TypeError):
        view[0] = first  # type: ignore[index]
    assert repr(view).startswith("EventLog([UntypedEvent(type='a'")


def test_events_view_compares_equal_to_sequences_with_equal_items() -> None:
    one = Session("a", one_turn_log())
    two = Session("b", one_turn_log())
    assert one.events == two.events
    assert one.events == one_turn_log()
    assert one.events == tuple(one_turn_log())
    assert one.events != one_turn_log()[:-1]
    assert one.events != "not events"
    assert (one.events == 5) is False
    with pytest.raises(TypeError):
        hash(one.events)


# -------------------------------------------------------------------- derive
def test_derive_skips_boundaries_chunks_usage_errors_and_unknown_types() -> None:
    events = log(
        ("turn/start", turn_start(1)),
        ("step/start", step(1, 1)),
        ("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "x"}}),
        ("usage", {"turn": 1, "step": 1, "usage": {"inputTokens": 1, "outputTokens": 2}}),
        ("error", {"turn": 1, "step": 1, "message": "boom"}),
        ("tool/call", {"turn": 1, "step": 1, "callId": "c", "name": "n", "arguments": "{}"}),
        ("plugin/custom", {"content": [text_json("never shown")]}),
        ("step/end", step(1, 1)),
        ("turn/end", turn_end(1)),
    )
    assert derive_messages(events) == []


def test_derive_hides_the_structured_tool_error_and_keeps_is_error() -> None:
    data = tool_result(1, 1, "c9", "interrupted", is_error=True)
    data["error"] = {"name": "InterruptedError", "code": "interrupted"}
    messages = derive_messages(log(("tool/result", data)))
    assert to_json(messages) == [
        {
            "role": "user",
            "content": [
                {"type": "tool-result", "toolCallId": "c9", "content": [text_json("interrupted")], "isError": True}
            ],
        }
    ]


def test_a_tool_result_without_is_error_is_malformed() -> None:
    """SPEC §3.1: ``isError`` is always present; a line lacking it is refused at the edge."""
    data = {"turn": 1, "step": 1, "callId": "c", "content": [text_json("ok")]}
    with pytest.raises(HarnessError, match="missing required field `isError`"):
        log(("tool/result", data))


def test_derive_encodes_an_unknown_source_kind_as_json() -> None:
    data = {"content": [text_json("x")], "source": {"kind": 'odd"kind'}}
    messages = derive_messages(log(("context/message", data)))
    assert messages[0].content[0] == text('<context source="odd\\"kind">')


def test_derive_shares_the_logged_values() -> None:
    """No copies: derived content is the logged content; a tool result reuses the result's content."""
    events = log(
        ("user/message", user_message("x")),
        ("assistant/message", assistant_message(1, 1, text_json("y"))),
        ("tool/result", tool_result(1, 1, "c", "z")),
        ("context/message", {"content": [text_json("c")], "source": {"kind": "user"}}),
    )
    messages = derive_messages(events)
    for index in (0, 1):
        assert messages[index].content is events[index].data.content  # type: ignore[union-attr]
    result = messages[2].content[0]
    assert type(result) is ToolResultBlock
    assert result.content is events[2].data.content  # type: ignore[union-attr]
    assert messages[3].content[1] is events[3].data.content[0]  # type: ignore[union-attr]


def test_derive_accepts_any_iterable_of_events() -> None:
    assert derive_messages(iter(log(("user/message", user_message("x"))))) == [
        Message(role="user", content=(TextBlock(text="x"),))
    ]


def test_an_aborted_turn_after_a_user_message_gets_the_interruption_note() -> None:
    events = log(
        ("turn/start", turn_start(1)),
        ("user/message", user_message("x")),
        ("turn/end", turn_end(1, "aborted")),
        ("turn/end", turn_end(1, "aborted")),
    )
    messages = derive_messages(events)
    assert to_json(messages[1:]) == [{"role": "assistant", "content": [text_json("[interrupted by the user]")]}]
    assert derive_messages(log(("turn/end", turn_end(1, "aborted")))) == []


def test_assistant_message_data_is_typed() -> None:
    session = Session("s")
    logged = session.append(AssistantMessageEvent, AssistantMessageData(turn=1, step=1, content=(text("a"),)))
    assert logged.data.content == (text("a"),)


# -------------------------------------------------------------- turn helpers
def test_last_turn_number_reads_the_last_turn_start() -> None:
    assert last_turn_number([]) == 0
    assert last_turn_number(Session("s")) == 0
    events = one_turn_log(turn=1) + one_turn_log(turn=4, start=6)[:3]
    assert last_turn_number(events) == 4
    assert last_turn_number(Session("s", events)) == 4
    assert last_turn_number(log(("user/message", user_message("x")))) == 0


def test_is_turn_open_reads_the_last_turn_boundary() -> None:
    assert is_turn_open([]) is False
    assert is_turn_open(one_turn_log()) is False
    assert is_turn_open(one_turn_log()[:-1]) is True
    assert is_turn_open(Session("s", one_turn_log()[:2])) is True
    assert is_turn_open(log(("user/message", user_message("x")))) is False
    session = Session("s", one_turn_log())
    session.append("turn/start", turn_start(2))
    session.append("context/message", {"content": [text_json("c")], "source": {"kind": "user"}})
    assert is_turn_open(session) is True
    session.append("turn/end", turn_end(2))
    assert is_turn_open(session) is False


class FreshData(msgspec.Struct, frozen=True):
    value: int


class FreshEvent(SessionEventBase, frozen=True, tag="test/fresh"):
    data: FreshData


def test_append_of_an_event_class_never_seen_before() -> None:
    """A typed append of a class neither core nor registered learns its payload class on first use."""
    session = Session("s")
    logged = session.append(FreshEvent, FreshData(value=1))
    assert logged == FreshEvent(seq=0, time=logged.time, data=FreshData(value=1))
    assert session.append(FreshEvent, FreshData(value=2)).seq == 1
    with pytest.raises(HarnessError, match="FreshEvent carries FreshData, got int"):
        session.append(FreshEvent, 3)


def test_derive_message_of_single_events() -> None:
    user, chunk = log(
        ("user/message", user_message("x")),
        ("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": "x"}}),
    )
    assert derive_message(user) == Message(role="user", content=(text("x"),))
    assert derive_message(chunk) is None
