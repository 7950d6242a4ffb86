"""The policy's waits, the config's per-model resolution, the event's log line, the CLI's retry line."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from dsh.cli.agent import retry_line
from dsh.core.agent import RetryNotice
from dsh.core.errors import LlmError, retry_after_seconds
from dsh.core.session import Session, UntypedEvent, parse_session_event_line, session_event_line
from dsh.kernel import Context
from dsh.plugins import llm_retry
from dsh.plugins.llm_retry import (
    TRANSIENT_CODES,
    Config,
    LlmFailure,
    LlmRetryData,
    LlmRetryEvent,
    Policy,
    delay_ms,
)
from tests.plugins.llm_retry.helpers import highest


def lowest(low: float, high: float) -> float:
    return low


def test_the_defaults_are_four_attempts_one_second_thirty_seconds_and_the_transient_codes() -> None:
    policy = Config().policy("any")
    assert (policy.attempts, policy.base_ms, policy.cap_ms) == (4, 1000, 30_000)
    assert policy.codes == TRANSIENT_CODES
    assert set(TRANSIENT_CODES) >= {"RATE_LIMIT", "SERVER", "TIMEOUT", "NETWORK", "STREAM_CLOSED"}


def test_full_jitter_draws_between_zero_and_the_doubling_bound_up_to_the_cap() -> None:
    policy = Policy(base_ms=500, cap_ms=3000)
    assert [delay_ms(policy, attempt, None, highest) for attempt in (1, 2, 3, 4, 5)] == [500, 1000, 2000, 3000, 3000]
    assert delay_ms(policy, 3, None, lowest) == 0
    drawn: list[tuple[float, float]] = []
    delay_ms(policy, 2, None, lambda low, high: drawn.append((low, high)) or 0.0)
    assert drawn == [(0.0, 1000.0)]


def test_retry_after_is_kept_exactly_within_the_cap_and_refused_beyond_it() -> None:
    policy = Policy(cap_ms=5000)
    assert delay_ms(policy, 1, 2.5, highest) == 2500
    assert delay_ms(policy, 1, 5.0, highest) == 5000
    assert delay_ms(policy, 1, 5.001, highest) is None
    assert delay_ms(policy, 1, 0.0, highest) == 0


def test_config_is_camel_case_and_checked() -> None:
    config = Config.model_validate({"baseMs": 5, "capMs": 6, "models": {"m*": {"capMs": 1}}})
    assert config.policy("model").cap_ms == 1
    assert config.policy("model").base_ms == 5
    assert config.policy("x").cap_ms == 6
    with pytest.raises(ValidationError):
        Config.model_validate({"attempts": 0})
    with pytest.raises(ValidationError):
        Config.model_validate({"retries": 3})


def test_the_first_matching_model_pattern_wins() -> None:
    config = Config.model_validate({"models": {"deepseek-*": {"attempts": 2}, "deepseek-v4-pro": {"attempts": 9}}})
    assert config.policy("deepseek-v4-pro").attempts == 2
    assert config.policy("other").attempts == 4


async def test_the_event_decodes_typed_while_the_plugin_is_loaded_and_untyped_after() -> None:
    data = LlmRetryData(
        turn=1,
        step=2,
        model="m",
        retry=1,
        max_retries=3,
        delay_ms=250,
        failure=LlmFailure(message="busy", code="SERVER", status=503),
    )
    line = session_event_line(Session("s").append(LlmRetryEvent, data))
    assert '"type":"llm/retry"' in line
    assert '"maxRetries":3,"delayMs":250,"failure":{"message":"busy","code":"SERVER","status":503}' in line
    root = Context()
    fiber = await root.plugin(llm_retry)
    assert parse_session_event_line(line).data == data
    await fiber.dispose()
    assert type(parse_session_event_line(line)) is UntypedEvent
    await root.dispose()


def test_retry_after_headers_in_seconds_milliseconds_or_an_http_date() -> None:
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after": "0.5"}) == 0.5
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({}) is None
    assert retry_after_seconds({"retry-after": "-1"}) is None
    assert retry_after_seconds({"retry-after": "nan"}) is None
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({"retry-after-ms": "x", "retry-after": "2"}) == 2.0
    date = "Wed, 21 Oct 2015 07:28:30 GMT"
    assert retry_after_seconds({"retry-after": date}, now=1445412480.0) == 30.0
    assert retry_after_seconds({"retry-after": date}, now=1445412600.0) == 0.0
    assert retry_after_seconds({"retry-after": date}) == 0.0  # long past by the wall clock
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:30 -0000"}) is None


def test_an_llm_error_carries_the_retry_after_it_was_given() -> None:
    assert LlmError("m", "RATE_LIMIT", 429, retry_after=2.0).retry_after == 2.0
    assert LlmError("m", "SERVER").retry_after is None


def test_the_cli_says_each_retry_on_one_line() -> None:
    limited = RetryNotice(attempt=1, max_attempts=4, delay_ms=4000, error=LlmError("slow", "RATE_LIMIT", 429))
    assert retry_line(limited) == "dsh: retrying in 4 s (429 RATE_LIMIT), attempt 2 of 4"
    cut = RetryNotice(attempt=2, max_attempts=3, delay_ms=1234, error=LlmError("cut", "STREAM_CLOSED"))
    assert retry_line(cut) == "dsh: retrying in 1.23 s (STREAM_CLOSED), attempt 3 of 3"
