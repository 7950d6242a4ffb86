"""How a prompt's turn ended, read from the log, and the exit status it gives."""

from __future__ import annotations

from typing import Any

from dsh.cli.agent import describe_reason, exit_status, turn_outcome
from dsh.core.session import Session


def session(*events: tuple[str, dict[str, Any]]) -> Session:
    log = Session("s")
    for kind, data in events:
        log.append(kind, data)
    return log


MESSAGE = {"kind": "message", "source": {"kind": "user"}}
INJECTION = {"kind": "injection", "source": {"kind": "plugin"}}


def test_the_outcome_is_the_first_message_turn_after_the_mark() -> None:
    log = session(
        ("turn/start", {"turn": 1, "trigger": MESSAGE}),
        ("turn/end", {"turn": 1, "reason": {"kind": "completed"}}),
        ("turn/start", {"turn": 2, "trigger": INJECTION}),
        ("turn/end", {"turn": 2, "reason": {"kind": "completed"}}),
        ("turn/start", {"turn": 3, "trigger": MESSAGE}),
        ("turn/end", {"turn": 3, "reason": {"kind": "error", "message": "m"}}),
    )
    outcome = turn_outcome(log, 2)
    assert (outcome.turn, outcome.reason) == (3, {"kind": "error", "message": "m"})
    assert turn_outcome(log, 6).turn is None
    open_turn = session(("turn/start", {"turn": 1, "trigger": MESSAGE}))
    assert (turn_outcome(open_turn, 0).turn, turn_outcome(open_turn, 0).reason) == (1, None)


def test_exit_statuses_per_reason() -> None:
    assert exit_status({"kind": "completed"}) == 0
    assert exit_status({"kind": "max-tokens"}) == 3
    assert exit_status({"kind": "aborted", "reason": "x"}) == 130
    for other in ({"kind": "error", "message": "m"}, {"kind": "disposed"}, {"kind": "new-kind"}, None):
        assert exit_status(other) == 1


def test_reasons_read_like_sentences() -> None:
    assert describe_reason(None) == "did not end"
    assert describe_reason({"kind": "completed"}) == "completed"
    assert describe_reason({"kind": "aborted"}) == "aborted"
    assert describe_reason({"kind": "aborted", "reason": ""}) == "aborted"
    assert describe_reason({"kind": "aborted", "reason": "stop"}) == "aborted (stop)"
    assert describe_reason({"kind": "error", "message": "m"}) == "error: m"
    assert describe_reason({"kind": "error", "message": "m", "code": "C"}) == "error: m [C]"
