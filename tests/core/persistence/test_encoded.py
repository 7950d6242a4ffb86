"""Encoded events: the coordinator's snapshot of a logged event, and the batches backends receive."""

from __future__ import annotations

import enum
import gc
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dsh.core.persistence import PersistenceBackend
from dsh.core.persistence.encoded import EncodedEvents, encode_event
from dsh.core.session import NotJsonError, SessionEvent, dumps_json, session_event_line
from tests.core.session.helpers import event, user_message

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(exclude_categories=())),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=25,
)
"""JSON values, strings drawn from every code point (lone surrogates and non-ASCII included)."""

event_types = st.sampled_from(["assistant/chunk", "user/message", "ünïcode/type", 'quote"d\\type', "\ud800"])


class Seq(enum.IntEnum):
    FIVE = 5


class Kind(enum.StrEnum):
    CHUNK = "assistant/chunk"


class RefusesItems(dict[str, Any]):
    """A dict subclass the C encoder cannot read (it calls ``items()``), but a copy can."""

    def items(self) -> Any:
        raise TypeError("no items for you")


@given(kind=event_types, seq=st.integers(min_value=0), time=st.integers(min_value=0), data=json_values)
def test_an_encoded_event_is_the_jsonl_line_session_event_line_writes(
    kind: str, seq: int, time: int, data: Any
) -> None:
    """lines() of an encoded event equals session_event_line of the event, byte for byte."""
    logged: SessionEvent = {"type": kind, "seq": seq, "time": time, "data": data}
    assert EncodedEvents([encode_event(logged)]).lines() == [session_event_line(logged)]


@given(kind=event_types, seq=st.integers(min_value=0), data=json_values)
def test_reading_an_encoded_event_gives_back_an_equal_event(kind: str, seq: int, data: Any) -> None:
    """Decoding restores the event exactly: same keys in order, same values and types."""
    logged: SessionEvent = {"type": kind, "seq": seq, "time": 7, "data": data}
    [decoded] = EncodedEvents([encode_event(logged)])
    assert dumps_json(decoded) == dumps_json(logged)
    assert decoded == logged


def test_the_encoding_is_a_snapshot_later_mutation_of_the_event_is_not_seen() -> None:
    """The record holds text: changing the logged event afterwards changes nothing."""
    logged = event("user/message", 0, user_message("original"))
    record = encode_event(logged)
    logged["data"]["content"][0]["text"] = "MUTATED"
    logged["seq"] = 99
    [decoded] = EncodedEvents([record])
    assert decoded == event("user/message", 0, user_message("original"))


def test_a_record_is_a_plain_tuple_the_garbage_collector_stops_tracking() -> None:
    """Buffered records hold only str and int: after one collection the GC no longer scans them."""
    record = encode_event(event("user/message", 3, user_message("hi"), time=5))
    assert record == ("user/message", 3, 5, '{"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"}}')
    assert type(record) is tuple
    gc.collect()
    assert not gc.is_tracked(record)


def test_a_batch_reads_as_a_sequence_of_fresh_events() -> None:
    """len, indexing (also negative), slices and iteration decode; each access is a new dict."""
    events = [event("user/message", seq, user_message(f"m{seq}"), time=seq) for seq in range(3)]
    batch = EncodedEvents([encode_event(item) for item in events])
    assert len(batch) == 3
    assert batch[0] == events[0]
    assert batch[-1] == events[2]
    assert batch[1:] == events[1:]
    assert list(batch) == events
    assert batch[0] is not batch[0]
    batch[0]["data"]["content"][0]["text"] = "changed"
    assert batch[0] == events[0]
    assert batch.seqs == [0, 1, 2]
    assert batch.records == tuple(encode_event(item) for item in events)
    assert events[1] in batch
    assert repr(batch).startswith("EncodedEvents([('user/message', 0, 0, ")


def test_a_batch_keeps_its_own_records() -> None:
    """The records list given to a batch can change afterwards without reaching it."""
    records = [encode_event(event("turn/start", 0, {"turn": 1}))]
    batch = EncodedEvents(records)
    records.clear()
    assert len(batch) == 1


def test_encoded_batch_hands_a_batch_over_as_is_and_encodes_anything_else() -> None:
    """A backend gets the coordinator's batch itself; a plain list is encoded on the spot."""
    events = [event("turn/start", 0, {"turn": 1}), event("turn/end", 1, {"turn": 1, "reason": {"kind": "completed"}})]
    batch = PersistenceBackend.encoded_batch(events)
    assert type(batch) is EncodedEvents
    assert list(batch) == events
    assert PersistenceBackend.encoded_batch(batch) is batch
    assert EncodedEvents.of(batch) is batch


def test_an_envelope_of_str_and_int_subclasses_is_written_plain() -> None:
    """An enum member as type or seq is written as its plain value, like json.dumps does."""
    logged: Any = {"type": Kind.CHUNK, "seq": Seq.FIVE, "time": 1, "data": {}}
    record = encode_event(logged)
    assert record == ("assistant/chunk", 5, 1, "{}")
    assert (type(record[0]), type(record[1])) == (str, int)
    assert EncodedEvents([record]).lines() == ['{"type":"assistant/chunk","seq":5,"time":1,"data":{}}']


@pytest.mark.parametrize(
    "envelope",
    [
        {"type": 1, "seq": 0, "time": 0},
        {"type": "t", "seq": True, "time": 0},
        {"type": "t", "seq": 0, "time": False},
        {"type": "t", "seq": "0", "time": 0},
        {"type": "t", "seq": 0, "time": 1.5},
    ],
)
def test_an_envelope_that_is_not_str_int_int_is_refused(envelope: dict[str, Any]) -> None:
    """A bool or non-int seq/time, or a non-str type, would make a corrupt line: TypeError."""
    with pytest.raises(TypeError, match=r"not a session event envelope.*as Session\.append logs them"):
        encode_event({**envelope, "data": None})  # type: ignore[typeddict-item]


def test_an_envelope_missing_a_key_raises_key_error() -> None:
    """Nothing to encode without a time."""
    with pytest.raises(KeyError):
        encode_event({"type": "t", "seq": 0, "data": None})  # type: ignore[typeddict-item]


def test_data_the_encoder_refuses_is_reported_with_its_path() -> None:
    """Non-JSON data (from a direct session/event emit) raises NotJsonError naming the offender."""
    with pytest.raises(NotJsonError, match=r"\$\.content\[1\]"):
        encode_event(event("user/message", 0, {"content": [1, {2, 3}]}))
    with pytest.raises(NotJsonError, match="non-finite"):
        encode_event(event("usage", 0, {"cost": float("nan")}))


def test_data_only_a_copy_can_encode_is_encoded_from_its_plain_copy() -> None:
    """A dict subclass the encoder cannot read is JSON all the same: its plain copy is written."""
    record = encode_event(event("custom/thing", 0, {"inner": RefusesItems(a=[1, "é"])}))
    assert record[3] == '{"inner":{"a":[1,"é"]}}'
    assert json.loads(record[3]) == {"inner": {"a": [1, "é"]}}
