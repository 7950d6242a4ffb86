"""Incremental derivation and shared seeds (the cheap paths of SPEC §3.3).

``Session.derive_messages`` derives only what was appended since its previous call
and hands out a new list of the shared, immutable messages each time; a seed's
events are kept as they are (no copy).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.core.llm import Message, text, to_json
from dsh.core.session import SESSION_EVENT, Session, SessionStore, derive_messages
from dsh.core.session.derive import INTERRUPTED_NOTE, Derivation
from dsh.kernel import Context
from tests.core.session.helpers import (
    assistant_message,
    log,
    one_turn_log,
    step,
    tool_call_block,
    tool_result,
    turn_start,
    user_message,
)
from tests.core.session.helpers import (
    text as text_json,
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


def test_derivation_follows_appends_and_equals_a_full_walk() -> None:
    """Each call covers exactly the log so far, whatever was derived before."""
    session = Session("s")
    assert session.derive_messages() == []
    for turn in range(1, 4):
        _exchange(session, turn)
        assert session.derive_messages() == derive_messages(session.events)
    assert len(session.derive_messages()) == 9


def test_changing_the_returned_list_affects_neither_the_log_nor_later_derivations() -> None:
    """The list is the caller's; the messages in it are immutable shared values."""
    session = Session("s")
    for turn in range(1, 5):
        _exchange(session, turn)
    expected = derive_messages(session.events)
    first = session.derive_messages()
    first.clear()
    first.append(Message(role="user", content=()))
    assert session.derive_messages() == expected


def test_every_call_hands_out_a_new_list_of_the_same_messages() -> None:
    """Two derivations of the same log are distinct lists holding the very same message values."""
    session = Session("s")
    for turn in range(1, 4):
        _exchange(session, turn)
    first, second = session.derive_messages(), session.derive_messages()
    assert first == second
    assert first is not second
    assert all(left is right for left, right in zip(first, second, strict=True))


def test_a_long_history_is_derived_in_order() -> None:
    session = Session("s")
    for number in range(200):
        session.append("user/message", user_message(f"m{number}"))
    derived = session.derive_messages()
    assert [message.content[0] for message in derived] == [text(f"m{n}") for n in range(200)]
    session.append("user/message", user_message("last"))
    assert session.derive_messages()[-1].content == (text("last"),)


def test_a_seeded_session_derives_its_seed_on_the_first_call() -> None:
    """replays identically from a seeded event log (incremental form)"""
    original = Session("s")
    for turn in range(1, 5):
        _exchange(original, turn)
    replayed = Session("r", list(original.events))
    assert replayed.derive_messages() == original.derive_messages()


def test_derivation_only_walks_new_events() -> None:
    """A Derivation extends what it derived: an event already covered is not looked at again."""
    events = log(("user/message", user_message("a")), ("user/message", user_message("b")))
    derivation = Derivation()
    first = derivation.messages(events[:1])
    assert first == [Message(role="user", content=(text("a"),))]
    # the covered prefix is trusted, not re-derived: swapping it shows it is not walked again
    swapped = [events[1], events[1]]
    assert derivation.messages(swapped) == [first[0], Message(role="user", content=(text("b"),))]
    assert derivation.messages(swapped) == derivation.messages(swapped)


@settings(deadline=None, max_examples=40)
@given(st.lists(st.sampled_from(["user", "assistant", "result", "chunk", "context", "abort", "derive"]), max_size=40))
def test_property_incremental_derivation_always_equals_a_full_walk(script: list[str]) -> None:
    """Whatever the interleaving of appends and derivations, the result equals a fresh walk."""
    session = Session("s")
    for number, action in enumerate(script):
        if action == "user":
            session.append("user/message", user_message(f"u{number}"))
        elif action == "assistant":
            session.append("assistant/message", assistant_message(1, 1, text_json(f"a{number}")))
        elif action == "result":
            session.append("tool/result", tool_result(1, 1, f"c{number}", f"r{number}"))
        elif action == "chunk":
            chunk = {"type": "text-delta", "index": 0, "text": "x"}
            session.append("assistant/chunk", {"turn": 1, "step": 1, "chunk": chunk})
        elif action == "context":
            session.append(
                "context/message", {"content": [text_json("c")], "source": {"kind": "plugin", "plugin": "p"}}
            )
        elif action == "abort":
            session.append("turn/end", {"turn": 1, "reason": {"kind": "aborted"}})
        else:
            session.derive_messages().clear()
    assert session.derive_messages() == derive_messages(session.events)


# ------------------------------------------------------------------ shared seeds
def test_a_seed_is_kept_uncopied() -> None:
    """The log holds the seed's own (immutable) event values."""
    seed = one_turn_log()
    session = Session("s", seed)
    assert all(logged is given for logged, given in zip(session.events, seed, strict=True))
    assert session.seq == 6
    assert session.derive_messages() == Session("t", one_turn_log()).derive_messages()


async def test_the_store_passes_the_seed_through(root: Context, store: SessionStore) -> None:
    """SessionStore.create(seed=...) keeps the seed's events; nothing is emitted for them."""
    seen: list[Any] = []
    root.on(SESSION_EVENT, lambda _session, logged: seen.append(logged))
    seed = one_turn_log()
    session = store.create("s", seed=seed)
    assert session.events[3] is seed[3]
    assert seen == []


def test_an_aborted_turn_without_an_answer_derives_the_interrupted_note() -> None:
    """Between the aborted prompt and the next one the model reads a note, never two user messages in a row."""
    prompt = {"content": [text_json("one")], "source": {"kind": "user"}}
    aborted = {"turn": 1, "reason": {"kind": "aborted", "reason": "interrupted"}}
    events = log(
        ("user/message", prompt),
        ("turn/end", aborted),
        ("user/message", prompt),
        ("assistant/message", {"turn": 2, "step": 1, "content": [text_json("part")]}),
        ("turn/end", {**aborted, "turn": 2}),
        ("turn/end", {"turn": 3, "reason": {"kind": "completed"}}),
    )
    note = {"role": "assistant", "content": [text_json(INTERRUPTED_NOTE)]}
    expected = [
        {"role": "user", "content": prompt["content"]},
        note,
        {"role": "user", "content": prompt["content"]},
        {"role": "assistant", "content": [text_json("part")]},
    ]
    assert to_json(derive_messages(events)) == expected
    derivation = Derivation()
    assert to_json(derivation.messages(events[:1])) == expected[:1]
    assert to_json(derivation.messages(events)) == expected
    assert derive_messages(events[1:2]) == []  # nothing to note before any message
