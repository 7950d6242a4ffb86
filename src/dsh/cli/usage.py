"""Token usage and cost as ``dsh`` shows them: ``sessions show`` lines and the ``run --json`` summary.

Everything is derived from the log with :func:`dsh.core.usage.summarize_usage`; costs
use the price of the model the command runs with (:data:`dsh.core.usage.DEFAULT_PRICES`,
DeepSeek's published prices), since the log does not record which model answered.
"""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType

from dsh.core.session import TurnEndReason
from dsh.core.usage import DEFAULT_PRICES, ModelPrice, TokenTotals, UsageSummary


def price_of(model: str | None) -> ModelPrice | None:
    """The default price of ``model``, None when it has none (or no model is known)."""
    return None if model is None else DEFAULT_PRICES.get(model)


def format_cost(cost: float | UnsetType) -> str:
    """``$0.001234`` (six decimals, enough for one cheap step), ``-`` without a price."""
    return "-" if cost is UNSET else f"${cost:.6f}"


def format_tokens(tokens: TokenTotals) -> str:
    """``in 120, out 30, cache read 800, cache write 0, reasoning 12``."""
    return (
        f"in {tokens.input_tokens}, out {tokens.output_tokens}, cache read {tokens.cache_read_tokens}, "
        f"cache write {tokens.cache_write_tokens}, reasoning {tokens.reasoning_tokens}"
    )


def usage_lines(summary: UsageSummary, model: str | None) -> list[str]:
    """The ``usage`` section of ``sessions show``: one line per turn, then the session's total."""
    priced = f"at {model} prices" if summary.cost is not UNSET else "no price known for the model"
    lines = ["", f"── usage ({priced}) ──"]
    for turn in summary.turns:
        lines.append(
            f"turn {turn.turn}: {turn.steps} step(s); {format_tokens(turn.tokens)}; cost {format_cost(turn.cost)}"
        )
    lines.append(
        f"session: {len(summary.turns)} turn(s), {summary.steps} step(s); {format_tokens(summary.tokens)}; "
        f"cost {format_cost(summary.cost)}"
    )
    return lines


class RunSummary(Struct, frozen=True, kw_only=True, rename="camel", tag_field="type", tag="run/summary"):
    """The last line of ``dsh run --json``: what this run added to the session.

    ``turns`` and ``steps`` count the ``turn/start`` and ``step/start`` events the run
    logged, ``usage`` and ``cost`` sum its ``usage`` events (``cost`` absent when the
    model has no price), ``duration_ms`` is wall time from sending the prompt to the
    agent's idle, ``end_reason`` the prompt's turn-end reason (absent when it never
    ended).
    """

    session_id: str
    turns: int
    steps: int
    usage: TokenTotals
    cost: float | UnsetType = UNSET
    duration_ms: int
    end_reason: TurnEndReason | UnsetType = UNSET


def run_summary(session_id: str, summary: UsageSummary, duration_ms: int, reason: TurnEndReason | None) -> RunSummary:
    """The summary line's value (``summary`` is the usage of the run's events)."""
    return RunSummary(
        session_id=session_id,
        turns=len(summary.turns),
        steps=summary.steps,
        usage=summary.tokens,
        cost=summary.cost,
        duration_ms=duration_ms,
        end_reason=UNSET if reason is None else reason,
    )
