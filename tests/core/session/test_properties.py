"""Session properties (SPEC §3.9 describe "Session properties"), with hypothesis."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh.core.llm import encode
from dsh.core.session import Session, derive_messages

texts = st.text(max_size=12)
blocks = st.lists(st.builds(lambda value: {"type": "text", "text": value}, texts), max_size=3)
sources = st.sampled_from([{"kind": "user"}, {"kind": "plugin", "plugin": "p"}, {"kind": "agent", "agentId": "a"}])
small = st.integers(min_value=0, max_value=9)

message_events = st.one_of(
    st.builds(lambda content, source: ("user/message", {"content": content, "source": source}), blocks, sources),
    st.builds(lambda content, source: ("context/message", {"content": content, "source": source}), blocks, sources),
    st.builds(
        lambda turn, content, source: (
            "steering/message",
            {"turn": turn, "content": content, "source": source},
        ),
        small,
        blocks,
        sources,
    ),
    st.builds(
        lambda turn, number, content: (
            "assistant/message",
            {"turn": turn, "step": number, "content": content},
        ),
        small,
        small,
        blocks,
    ),
    st.builds(
        lambda turn, number, call, content, failed: (
            "tool/result",
            {"turn": turn, "step": number, "callId": call, "content": content, "isError": failed},
        ),
        small,
        small,
        texts,
        blocks,
        st.booleans(),
    ),
)

other_events = st.one_of(
    st.builds(lambda turn: ("turn/start", {"turn": turn, "trigger": {"kind": "continuation"}}), small),
    st.builds(lambda turn: ("turn/end", {"turn": turn, "reason": {"kind": "completed"}}), small),
    st.builds(lambda turn, number: ("step/start", {"turn": turn, "step": number}), small, small),
    st.builds(lambda turn, number: ("step/end", {"turn": turn, "step": number}), small, small),
    st.builds(
        lambda value: (
            "assistant/chunk",
            {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": value}},
        ),
        texts,
    ),
    st.builds(
        lambda count: (
            "usage",
            {"turn": 1, "step": 1, "usage": {"inputTokens": count, "outputTokens": count}},
        ),
        small,
    ),
    st.builds(lambda message: ("error", {"turn": 1, "step": 1, "message": message}), texts),
    st.builds(
        lambda call: ("tool/call", {"turn": 1, "step": 1, "callId": call, "name": "n", "arguments": "{}"}),
        texts,
    ),
    st.builds(lambda kind, value: (f"plugin/{kind}", {"content": [{"type": "text", "text": value}]}), texts, texts),
)

appends = st.lists(st.one_of(message_events, other_events), max_size=25)


def _session(entries: list[tuple[str, Any]]) -> Session:
    session = Session("p")
    for kind, data in entries:
        session.append(kind, data)
    return session


@settings(deadline=None)
@given(appends)
def test_derive_messages_is_deterministic_same_log_identical_derivation(
    entries: list[tuple[str, Any]],
) -> None:
    """deriveMessages is deterministic (same log → identical derivation)"""
    session = _session(entries)
    first = session.derive_messages()
    assert session.derive_messages() == first
    assert derive_messages(list(session.events)) == first
    assert _session(entries).derive_messages() == first


@settings(deadline=None)
@given(appends)
def test_seq_is_strictly_monotonic_and_zero_based_contiguous(entries: list[tuple[str, Any]]) -> None:
    """seq is strictly monotonic and zero-based contiguous"""
    session = _session(entries)
    assert [event.seq for event in session.events] == list(range(len(entries)))
    assert session.seq == len(entries)
    assert [event.type for event in session.events] == [kind for kind, _ in entries]


@settings(deadline=None)
@given(appends)
def test_replay_from_seed_reproduces_the_derivation_identically(entries: list[tuple[str, Any]]) -> None:
    """replay-from-seed reproduces the derivation identically"""
    session = _session(entries)
    replayed = Session("replay", list(session.events))
    assert replayed.derive_messages() == session.derive_messages()
    assert replayed.seq == session.seq
    assert list(replayed.events) == list(session.events)


@settings(deadline=None)
@given(
    st.lists(message_events, max_size=10),
    st.lists(other_events, max_size=10),
    st.randoms(use_true_random=False),
)
def test_non_message_events_never_affect_derived_history_any_interleaving(
    messages: list[tuple[str, Any]], others: list[tuple[str, Any]], rng: Any
) -> None:
    """non-message events never affect derived history (any interleaving)"""
    slots = [True] * len(messages) + [False] * len(others)
    rng.shuffle(slots)
    message_iter, other_iter = iter(messages), iter(others)
    interleaved = [next(message_iter) if is_message else next(other_iter) for is_message in slots]
    assert _session(interleaved).derive_messages() == _session(messages).derive_messages()


@settings(deadline=None)
@given(appends)
def test_every_derived_message_has_a_known_role_and_decoupled_content(entries: list[tuple[str, Any]]) -> None:
    """every derived message has a known role and decoupled content

    Decoupled by immutability: no derived value can be changed, so the log cannot be
    changed through one (the bytes of the log stay the same).
    """
    session = _session(entries)
    before = encode(list(session.events))
    derived = session.derive_messages()
    for message in derived:
        assert message.role in ("user", "assistant")
        for block in message.content:
            with pytest.raises(AttributeError):
                block.text = "vandalized"  # type: ignore[union-attr]
        with pytest.raises(AttributeError):
            message.content = ()  # type: ignore[misc]
    derived.clear()
    assert encode(list(session.events)) == before
