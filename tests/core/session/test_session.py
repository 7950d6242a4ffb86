"""Session (SPEC §3.3, tests of §3.7 describe "Session")."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from dsh.core.errors import HarnessError
from dsh.core.session import (
    EventLog,
    NotJsonError,
    Session,
    SessionEvent,
    derive_messages,
    is_turn_open,
    last_turn_number,
)
from tests.core.session.conftest import PinnedClock
from tests.core.session.helpers import (
    assistant_message,
    event,
    log,
    one_turn_log,
    step,
    text,
    tool_call_block,
    tool_result,
    turn_end,
    turn_start,
    user_message,
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
    assert [message["role"] for message in messages] == ["user", "assistant", "user"]
    assert messages[0]["content"] == [text("hi")]
    assert messages[1]["content"] == [tool_call_block("c1", "read", '{"p":1}')]
    assert messages[2]["content"] == [
        {"type": "tool-result", "toolCallId": "c1", "content": [text("file body")], "isError": False}
    ]


def test_accepts_and_round_trips_a_max_tokens_turn_end_reason() -> None:
    """accepts and round-trips a max-tokens turn/end reason"""
    session = Session("s")
    logged = session.append("turn/end", {"turn": 1, "reason": {"kind": "max-tokens"}})
    assert logged["data"]["reason"] == {"kind": "max-tokens"}
    replayed = Session("s2", list(session.events))
    assert replayed.events[0]["data"]["reason"]["kind"] == "max-tokens"


def test_renders_context_and_steering_messages_as_tagged_synthetic_user_content() -> None:
    """renders context and steering messages as tagged synthetic user content"""
    session = Session("s")
    session.append("context/message", {"content": [text("ctx body")], "source": {"kind": "plugin", "plugin": "p"}})
    session.append("steering/message", {"turn": 1, "content": [text("steer")], "source": {"kind": "user"}})
    messages = session.derive_messages()
    assert messages == [
        {
            "role": "user",
            "content": [text('<context source="plugin">'), text("ctx body"), text("</context>")],
        },
        {
            "role": "user",
            "content": [text('<steering source="user">'), text("steer"), text("</steering>")],
        },
    ]


def test_replays_identically_from_a_seeded_event_log() -> None:
    """replays identically from a seeded event log"""
    original = Session("s")
    _chat(original)
    replayed = Session("s", list(original.events))
    assert replayed.derive_messages() == original.derive_messages()
    assert replayed.seq == original.seq == 9


def test_isolates_the_log_from_mutation_through_a_derived_message_append_only_contract() -> None:
    """isolates the log from mutation through a derived message (append-only contract)"""
    session = Session("s")
    _chat(session)
    session.append("context/message", {"content": [text("c")], "source": {"kind": "plugin", "plugin": "p"}})
    before = copy.deepcopy(list(session.events))
    messages = session.derive_messages()
    for message in messages:
        for block in message["content"]:
            vandal: Any = block
            vandal["type"] = "mutated"
            if "content" in block:
                vandal["content"].clear()
        message["content"].append(text("extra"))
    assert list(session.events) == before


def test_rejects_non_json_serializable_event_data_at_the_source_incl_sparse_arrays() -> None:
    """rejects non-JSON-serializable event data at the source (incl. sparse arrays)

    JS cases mapped to Python: bigint → tuple, function → lambda, symbol → object(),
    Map → set, undefined → a None key, Infinity → float("inf"), sparse array → bytes
    (Python lists cannot have holes), dense-with-bigint → a list holding a tuple,
    nested function, cyclic.
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
        with pytest.raises(NotJsonError, match='session event "user/message" carries non-JSON-serializable data'):
            session.append("user/message", {"content": value, "source": {"kind": "user"}})
    assert len(session.events) == 0
    assert session.seq == 0


def test_accepts_dense_arrays_and_nested_plain_objects() -> None:
    """accepts dense arrays and nested plain objects"""
    session = Session("s")
    data = {"list": [1, 2, [3, {"deep": [None, True, 1.5, "x"]}]], "obj": {"a": {"b": {}}}}
    logged = session.append("custom/data", data)
    assert logged["data"] == data
    assert session.seq == 1


def test_validates_seed_events_rejects_a_non_json_serializable_seed() -> None:
    """validates seed events: rejects a non-JSON-serializable seed"""
    seed = [event("turn/start", 0, turn_start(1)), event("user/message", 1, {"content": (1,)})]
    with pytest.raises(NotJsonError, match=r'seed event "user/message" \(seq 1\) carries non-JSON-serializable data'):
        Session("s", seed)


def test_validates_seed_events_rejects_a_non_contiguous_seq() -> None:
    """validates seed events: rejects a non-contiguous seq"""
    seed = [event("turn/start", 0, turn_start(1)), event("user/message", 2, user_message("x"))]
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
        {"role": "user", "content": [text("hi")]},
        {"role": "assistant", "content": [text("hello")]},
    ]


def test_snapshots_the_seed_mutating_the_original_after_construction_does_not_affect_session_events() -> None:
    """snapshots the seed: mutating the original after construction does not affect session.events"""
    seed = one_turn_log()
    session = Session("s", seed)
    seed[1]["data"]["content"][0]["text"] = "MUTATED"
    seed[0]["type"] = "mutated"
    seed.append(event("user/message", 6, user_message("late")))
    assert session.seq == 6
    assert session.events[0]["type"] == "turn/start"
    assert session.events[1]["data"]["content"][0]["text"] == "hi"


def test_snapshots_append_data_mutating_the_passed_object_after_append_does_not_affect_session_events() -> None:
    """snapshots append data: mutating the passed object after append does not affect session.events"""
    session = Session("s")
    data = user_message("original")
    returned = session.append("user/message", data)
    data["content"][0]["text"] = "MUTATED"
    data["content"].append(text("more"))
    assert session.events[0]["data"]["content"] == [text("original")]
    assert returned["data"]["content"] == [text("original")]
    assert returned is session.events[0]
    assert returned["data"] is not data


# ----------------------------------------------------------------- the envelope
def test_append_builds_the_envelope_in_wire_key_order_with_clock_time(pinned_clock: PinnedClock) -> None:
    session = Session("s")
    first = session.append("user/message", user_message("a"))
    pinned_clock.tick(5)
    second = session.append("custom/type", None)
    assert list(first) == ["type", "seq", "time", "data"]
    assert first == {"type": "user/message", "seq": 0, "time": 1_000, "data": user_message("a")}
    assert second == {"type": "custom/type", "seq": 1, "time": 1_005, "data": None}
    assert type(second["time"]) is int


def test_the_real_clock_yields_integer_milliseconds() -> None:
    session = Session("s")
    logged = session.append("x", 1)
    assert type(logged["time"]) is int
    assert logged["time"] > 1_600_000_000_000
    assert type(session.header["createdAt"]) is int


def test_on_append_runs_after_the_push_and_a_raising_hook_propagates() -> None:
    session = Session("s")
    seen: list[tuple[Session, SessionEvent, int]] = []

    def hook(target: Session, logged: SessionEvent) -> None:
        seen.append((target, logged, target.seq))
        if logged["type"] == "boom":
            raise RuntimeError("listener failed")

    session.on_append = hook
    first = session.append("ok", 1)
    with pytest.raises(RuntimeError, match="listener failed"):
        session.append("boom", 2)
    assert [logged["type"] for logged in session.events] == ["ok", "boom"]
    assert seen[0] == (session, first, 1)
    assert seen[1][2] == 2


def test_seeding_does_not_call_on_append() -> None:
    calls: list[SessionEvent] = []
    session = Session("s", one_turn_log())
    session.on_append = lambda _session, logged: calls.append(logged)
    assert calls == []
    session.append("user/message", user_message("next"))
    assert [logged["seq"] for logged in calls] == [6]


@pytest.mark.parametrize(
    "bad",
    [
        "not a mapping",
        {"seq": 0, "time": 0, "data": None},
        {"type": 1, "seq": 0, "time": 0, "data": None},
        {"type": "x", "seq": 0, "time": 0.5, "data": None},
        {"type": "x", "seq": 0, "time": True, "data": None},
        {"type": "x", "seq": 0, "time": 0},
    ],
)
def test_rejects_a_seed_item_that_is_not_an_event_envelope(bad: Any) -> None:
    with pytest.raises(HarnessError, match="seed event at index 0 is not a session event") as caught:
        Session("s", [bad])
    assert caught.value.code == "INVALID_SEED"


@pytest.mark.parametrize("seq", [None, "0", 0.0, True])
def test_rejects_a_seed_seq_that_is_not_the_integer_index(seq: Any) -> None:
    with pytest.raises(HarnessError, match=r"seed event at index 0 has seq .* \(expected 0\)"):
        Session("s", [{"type": "x", "seq": seq, "time": 0, "data": None}])


def test_a_seed_keeps_only_the_envelope_keys_in_wire_order() -> None:
    seed: list[Any] = [{"data": {"k": 1}, "time": 5, "seq": 0, "type": "x", "extra": "dropped"}]
    session = Session("s", seed)
    assert list(session.events[0]) == ["type", "seq", "time", "data"]
    assert session.events[0] == {"type": "x", "seq": 0, "time": 5, "data": {"k": 1}}


def test_header_is_a_private_copy_of_the_given_one() -> None:
    header = {"version": 1, "id": "s", "createdAt": 7, "cwd": "/w"}
    session = Session("s", header=header)  # type: ignore[arg-type]
    header["cwd"] = "/elsewhere"
    assert session.header == {"version": 1, "id": "s", "createdAt": 7, "cwd": "/w"}
    assert session.id == "s"
    assert repr(session) == "<Session 's' seq=0>"


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
    assert repr(view).startswith("EventLog([{'type': 'a'")


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
        ("plugin/custom", {"content": [text("never shown")]}),
        ("step/end", step(1, 1)),
        ("turn/end", turn_end(1)),
    )
    assert derive_messages(events) == []


def test_derive_hides_the_structured_tool_error_and_keeps_is_error() -> None:
    data = tool_result(1, 1, "c9", "interrupted", is_error=True)
    data["error"] = {"name": "InterruptedError", "code": "interrupted"}
    messages = derive_messages(log(("tool/result", data)))
    assert messages == [
        {
            "role": "user",
            "content": [{"type": "tool-result", "toolCallId": "c9", "content": [text("interrupted")], "isError": True}],
        }
    ]


def test_derive_omits_is_error_when_a_foreign_log_lacks_it() -> None:
    data = {"turn": 1, "step": 1, "callId": "c", "content": [text("ok")]}
    block = derive_messages(log(("tool/result", data)))[0]["content"][0]
    assert block == {"type": "tool-result", "toolCallId": "c", "content": [text("ok")]}


def test_derive_encodes_an_unknown_source_kind_as_json() -> None:
    data = {"content": [text("x")], "source": {"kind": 'odd"kind'}}
    messages = derive_messages(log(("context/message", data)))
    assert messages[0]["content"][0] == text('<context source="odd\\"kind">')


def test_derive_accepts_any_iterable_of_events() -> None:
    assert derive_messages(iter(log(("user/message", user_message("x"))))) == [{"role": "user", "content": [text("x")]}]


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
    session.append("context/message", {"content": [text("c")], "source": {"kind": "user"}})
    assert is_turn_open(session) is True
    session.append("turn/end", turn_end(2))
    assert is_turn_open(session) is False
