"""Incremental derivation and seed hand-over (the cheap paths of SPEC §3.3).

``Session.derive_messages`` derives only what was appended since its previous call and
hands out a fresh deep copy each time; ``copy_seed=False`` lets a session keep the
seed's event objects instead of copying them, with the same checks.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.core.errors import HarnessError
from dsh.core.session import SESSION_EVENT, NotJsonError, Session, SessionStore, derive_messages
from dsh.core.session.derive import LARGE, SEGMENT, Derivation
from dsh.kernel import Context
from tests.core.session.helpers import (
    assistant_message,
    event,
    log,
    one_turn_log,
    step,
    text,
    tool_call_block,
    tool_result,
    turn_start,
    user_message,
)


def _exchange(session: Session, turn: int) -> None:
    """Append one turn with a tool call and its result (two derived messages per step)."""
    session.append("turn/start", turn_start(turn))
    session.append("user/message", user_message(f"question {turn}"))
    session.append("step/start", step(turn, 1))
    session.append("assistant/message", assistant_message(turn, 1, tool_call_block(f"c{turn}")))
    session.append("tool/result", tool_result(turn, 1, f"c{turn}", f"output {turn}"))
    session.append("step/end", step(turn, 1))
    session.append("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


def _vandalize(messages: list[Any]) -> None:
    for message in messages:
        message["role"] = "vandal"
        for block in message["content"]:
            block["type"] = "vandalized"
            if "content" in block:
                block["content"].append(text("extra"))
        message["content"].append(text("appended"))
    messages.append({"role": "user", "content": []})


def test_derivation_follows_appends_and_equals_a_full_walk() -> None:
    """Each call covers exactly the log so far, whatever was derived before."""
    session = Session("s")
    assert session.derive_messages() == []
    for turn in range(1, 4):
        _exchange(session, turn)
        assert session.derive_messages() == derive_messages(session.events)
    assert len(session.derive_messages()) == 9


def test_mutating_derived_messages_affects_neither_the_log_nor_later_derivations() -> None:
    """A derived message is the caller's: editing it deeply changes nothing the session holds."""
    session = Session("s")
    for turn in range(1, SEGMENT):  # enough messages to fill a packed segment and an open tail
        _exchange(session, turn)
    session.append("context/message", {"content": [text("c")], "source": {"kind": "plugin", "plugin": "p"}})
    expected = derive_messages(session.events)
    first = session.derive_messages()
    _vandalize(first)
    assert session.derive_messages() == expected
    assert derive_messages(session.events) == expected


def test_every_call_hands_out_new_containers() -> None:
    """Two derivations of the same log share no dict or list."""
    session = Session("s")
    for turn in range(1, SEGMENT + 2):
        _exchange(session, turn)
    first, second = session.derive_messages(), session.derive_messages()
    assert first == second
    assert first is not second
    for left, right in zip(first, second, strict=True):
        assert left is not right
        assert left["content"] is not right["content"]
        assert all(a is not b for a, b in zip(left["content"], right["content"], strict=True))


def test_messages_past_a_packed_segment_are_derived_in_order() -> None:
    """The history crosses several packed segments and keeps the log order."""
    session = Session("s")
    for number in range(3 * SEGMENT + 5):
        session.append("user/message", user_message(f"m{number}"))
    derived = session.derive_messages()
    assert [message["content"][0]["text"] for message in derived] == [f"m{n}" for n in range(3 * SEGMENT + 5)]
    session.append("user/message", user_message("last"))
    assert session.derive_messages()[-1]["content"] == [text("last")]


def test_a_seeded_session_derives_its_seed_on_the_first_call() -> None:
    """replays identically from a seeded event log (incremental form)"""
    original = Session("s")
    for turn in range(1, 5):
        _exchange(original, turn)
    replayed = Session("r", list(original.events))
    assert replayed.derive_messages() == original.derive_messages()


def test_a_value_too_deep_for_marshal_is_still_copied() -> None:
    """Content nested deeper than marshal allows is kept and deep-copied the slow way."""
    nested: Any = "leaf"
    for _ in range(2_100):
        nested = [nested]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        derivation = Derivation()
        events = [event("user/message", 0, {"content": [{"type": "x", "deep": nested}], "source": {"kind": "user"}})]
        events += log(*(("user/message", user_message(f"m{n}")) for n in range(SEGMENT)), start=1)
        first = derivation.messages(events)
        first[0]["content"][0]["deep"][0] = "changed"
        second = derivation.messages(events)
    finally:
        sys.setrecursionlimit(limit)
    assert isinstance(second[0]["content"][0]["deep"][0], list)
    assert second[0]["content"][0]["deep"] is not nested
    assert len(second) == SEGMENT + 1


@settings(deadline=None, max_examples=40)
@given(st.lists(st.sampled_from(["user", "assistant", "result", "chunk", "context", "derive"]), max_size=40))
def test_property_incremental_derivation_always_equals_a_full_walk(script: list[str]) -> None:
    """Whatever the interleaving of appends and derivations, the result equals a fresh walk."""
    session = Session("s")
    for number, action in enumerate(script):
        if action == "user":
            session.append("user/message", user_message(f"u{number}"))
        elif action == "assistant":
            session.append("assistant/message", assistant_message(1, 1, text(f"a{number}")))
        elif action == "result":
            session.append("tool/result", tool_result(1, 1, f"c{number}", f"r{number}"))
        elif action == "chunk":
            session.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0}})
        elif action == "context":
            session.append("context/message", {"content": [text("c")], "source": {"kind": "plugin"}})
        else:
            _vandalize(session.derive_messages())
    assert session.derive_messages() == derive_messages(session.events)


# ------------------------------------------------------------------ copy_seed=False
def test_a_handed_over_seed_is_kept_uncopied() -> None:
    """copy_seed=False: the log holds the seed's own event objects."""
    seed = one_turn_log()
    session = Session("s", seed, copy_seed=False)
    assert all(logged is given for logged, given in zip(session.events, seed, strict=True))
    assert session.seq == 6
    assert session.derive_messages() == Session("t", one_turn_log()).derive_messages()


def test_a_copied_seed_shares_nothing() -> None:
    """The default still copies every event."""
    seed = one_turn_log()
    session = Session("s", seed)
    assert all(logged is not given for logged, given in zip(session.events, seed, strict=True))
    assert all(logged["data"] is not given["data"] for logged, given in zip(session.events, seed, strict=True))


def test_a_handed_over_event_with_another_envelope_gets_a_new_one_around_the_same_data() -> None:
    """A non-canonical envelope (extra key, other key order, not a plain dict) is rebuilt; data stays."""
    data = user_message("x")
    extra: Any = {"type": "user/message", "seq": 0, "time": 5, "data": data, "note": "dropped"}
    reordered: Any = {"seq": 1, "type": "user/message", "time": 5, "data": data}

    class Envelope(dict[str, Any]):
        pass

    subclass = Envelope(type="user/message", seq=2, time=5, data=data)
    session = Session("s", [extra, reordered, subclass], copy_seed=False)
    for index, logged in enumerate(session.events):
        assert type(logged) is dict
        assert list(logged) == ["type", "seq", "time", "data"]
        assert logged["seq"] == index
        assert logged["data"] is data


def test_a_handed_over_seed_is_still_validated() -> None:
    """validates seed events: rejects a non-JSON-serializable seed (hand-over path)"""
    with pytest.raises(NotJsonError, match=r'seed event "user/message" \(seq 0\) carries non-JSON'):
        Session("s", [event("user/message", 0, {"content": [float("nan")]})], copy_seed=False)
    with pytest.raises(HarnessError, match="has seq 1 \\(expected 0\\)"):
        Session("s", [event("user/message", 1, user_message("x"))], copy_seed=False)
    with pytest.raises(HarnessError, match="is not a session event"):
        Session("s", [{"type": "user/message", "seq": 0, "data": {}}], copy_seed=False)  # type: ignore[list-item]
    with pytest.raises(HarnessError, match="is not a session event"):
        Session("s", ["not a mapping"], copy_seed=False)  # type: ignore[list-item]


def test_a_handed_over_seed_keeps_subclassed_json_as_it_is() -> None:
    """Checking without copying converts nothing (a str subclass stays a subclass)."""

    class Name(str):
        pass

    data = {"content": [text(Name("kept"))], "source": {"kind": "user"}}
    session = Session("s", [event("user/message", 0, data)], copy_seed=False)
    assert type(session.events[0]["data"]["content"][0]["text"]) is Name
    assert type(session.derive_messages()[0]["content"][0]["text"]) is str


async def test_the_store_passes_the_hand_over_through(root: Context, store: SessionStore) -> None:
    """SessionStore.create(copy_seed=False) keeps the seed's events; nothing is emitted for them."""
    seen: list[Any] = []
    root.on(SESSION_EVENT, lambda _session, logged: seen.append(logged))
    seed = one_turn_log()
    session = store.create("s", seed=seed, copy_seed=False)
    assert session.events[3] is seed[3]
    assert seen == []
    copied = store.create("t", seed=seed)
    assert copied.events[3] is not seed[3]


def test_a_large_message_is_copied_by_a_walk_and_keeps_its_place() -> None:
    """A message with a long text is kept apart from the packed ones: same order, fresh containers."""
    session = Session("s")
    session.append("user/message", user_message("before"))
    session.append("tool/result", tool_result(1, 1, "big", "x" * (4 * LARGE)))
    session.append("user/message", user_message("after"))
    first, second = session.derive_messages(), session.derive_messages()
    assert [message["content"][0]["type"] for message in first] == ["text", "tool-result", "text"]
    assert first == second == derive_messages(session.events)
    big_first, big_second = first[1]["content"][0], second[1]["content"][0]
    assert big_first is not big_second
    assert big_first["content"] is not big_second["content"]
    big_first["content"][0]["text"] = "changed"
    assert session.derive_messages()[1]["content"][0]["content"][0]["text"] == "x" * (4 * LARGE)


def _event(seq: int, kind: str, data: dict[str, Any]) -> Any:
    return {"seq": seq, "type": kind, "ts": 0, "data": data}


def test_an_aborted_turn_without_an_answer_derives_the_interrupted_note() -> None:
    """Between the aborted prompt and the next one the model reads a note, never two user messages in a row."""
    from dsh.core.session.derive import INTERRUPTED_NOTE

    prompt = {"turn": 1, "content": [{"type": "text", "text": "one"}], "source": {"kind": "user"}}
    aborted = {"turn": 1, "reason": {"kind": "aborted", "reason": "interrupted"}}
    events = [
        _event(0, "user/message", prompt),
        _event(1, "turn/end", aborted),
        _event(2, "user/message", {**prompt, "turn": 2}),
        _event(3, "assistant/message", {"turn": 2, "step": 1, "content": [{"type": "text", "text": "part"}]}),
        _event(4, "turn/end", {**aborted, "turn": 2}),
        _event(5, "turn/end", {"turn": 3, "reason": {"kind": "completed"}}),
    ]
    note = {"role": "assistant", "content": [{"type": "text", "text": INTERRUPTED_NOTE}]}
    expected = [
        {"role": "user", "content": prompt["content"]},
        note,
        {"role": "user", "content": prompt["content"]},
        {"role": "assistant", "content": [{"type": "text", "text": "part"}]},
    ]
    assert derive_messages(events) == expected
    derivation = Derivation()
    assert derivation.messages(events[:1]) == expected[:1]
    assert derivation.messages(events) == expected
    assert derive_messages(events[1:2]) == []  # nothing to note before any message
