"""How a prompt's turn ended, read from the log, and the exit status it gives."""

from __future__ import annotations

from msgspec import Raw

from dsh.cli.agent import describe_reason, exit_status, turn_outcome
from dsh.core.llm import PluginSource, UserSource
from dsh.core.session import (
    AbortedReason,
    CompletedReason,
    DisposedReason,
    ErrorReason,
    InjectionTrigger,
    MaxTokensReason,
    MessageTrigger,
    Session,
    TurnEndData,
    TurnEndEvent,
    TurnEndReason,
    TurnStartData,
    TurnStartEvent,
    TurnTrigger,
)

MESSAGE = MessageTrigger(source=UserSource())
INJECTION = InjectionTrigger(source=PluginSource(plugin="notes"))
NEW_KIND = Raw(b'{"kind":"new-kind"}')


def session(*turns: tuple[int, TurnTrigger, TurnEndReason | None]) -> Session:
    """A log of the given turns: ``(turn, trigger, reason)``, no ``turn/end`` when the reason is None."""
    log = Session("s")
    for turn, trigger, reason in turns:
        log.append(TurnStartEvent, TurnStartData(turn=turn, trigger=trigger))
        if reason is not None:
            log.append(TurnEndEvent, TurnEndData(turn=turn, reason=reason))
    return log


def test_the_outcome_is_the_first_message_turn_after_the_mark() -> None:
    log = session(
        (1, MESSAGE, CompletedReason()),
        (2, INJECTION, CompletedReason()),
        (3, MESSAGE, ErrorReason(message="m")),
    )
    outcome = turn_outcome(log, 2)
    assert (outcome.turn, outcome.reason) == (3, ErrorReason(message="m"))
    assert turn_outcome(log, 6).turn is None
    open_turn = session((1, MESSAGE, None))
    assert (turn_outcome(open_turn, 0).turn, turn_outcome(open_turn, 0).reason) == (1, None)


def test_a_turn_of_an_unknown_trigger_is_no_prompt_turn() -> None:
    log = session((1, Raw(b'{"kind":"timer"}'), CompletedReason()), (2, MESSAGE, NEW_KIND))
    outcome = turn_outcome(log, 0)
    assert (outcome.turn, outcome.reason) == (2, NEW_KIND)


def test_exit_statuses_per_reason() -> None:
    assert exit_status(CompletedReason()) == 0
    assert exit_status(MaxTokensReason()) == 3
    assert exit_status(AbortedReason(reason="x")) == 130
    for other in (ErrorReason(message="m"), DisposedReason(), NEW_KIND, None):
        assert exit_status(other) == 1


def test_reasons_read_like_sentences() -> None:
    assert describe_reason(None) == "did not end"
    assert describe_reason(CompletedReason()) == "completed"
    assert describe_reason(AbortedReason()) == "aborted"
    assert describe_reason(AbortedReason(reason="")) == "aborted"
    assert describe_reason(AbortedReason(reason="stop")) == "aborted (stop)"
    assert describe_reason(ErrorReason(message="m")) == "error: m"
    assert describe_reason(ErrorReason(message="m", code="C")) == "error: m [C]"
    assert describe_reason(NEW_KIND) == "new-kind"
    assert describe_reason(Raw(b'{"no":"kind"}')) == "unknown"
