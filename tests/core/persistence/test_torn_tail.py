"""The torn-tail rule both storage backends apply to a read-back log (SPEC §4.5)."""

from __future__ import annotations

from dsh.core.persistence import torn_tail
from dsh.core.session import SessionEvent, UntypedEvent
from tests.core.persistence.helpers import event, turn_end, turn_start


def test_torn_tail_finds_the_first_break_and_whether_a_turn_end_follows_it() -> None:
    """(extra) intact logs, torn tails (hole or seq gap after the last turn/end) and committed damage"""

    def ev(seq: int, kind: str = "x/other") -> SessionEvent:
        if kind == "turn/start":
            return event(kind, seq, turn_start(1))
        if kind == "turn/end":
            return event(kind, seq, turn_end(1))
        return UntypedEvent(type=kind, seq=seq, time=0, data={})

    intact: list[SessionEvent | Exception] = [ev(0, "turn/start"), ev(1, "turn/end")]
    assert torn_tail(intact) == (2, False)
    assert torn_tail([]) == (0, False)
    assert torn_tail([ev(0, "turn/end"), ev(1), ValueError("torn")]) == (2, False)
    assert torn_tail([ev(0), ev(2), ev(3)]) == (1, False)
    assert torn_tail([ev(0), ValueError("hole"), ev(2, "turn/end")]) == (1, True)
    assert torn_tail([ev(0), ev(5, "turn/end")]) == (1, True)
