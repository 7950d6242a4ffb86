"""llm-retry on the real stack: the loop, a real adapter and a wire server with scripted faults.

Only the clock is fake (:class:`~tests.plugins.llm_retry.helpers.FakeClock`): waits are
recorded, not slept.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from dsh.core.llm import TextDeltaChunk, text, text_of
from dsh.core.session import AssistantChunkEvent, AssistantMessageEvent
from dsh.plugins.llm_retry import LlmRetryEvent
from dsh.testing.wire import Reply, TextDelta, api_error, text_reply
from tests.plugins.llm_retry.helpers import MODEL, stack


def answers(session_events: Any) -> list[str]:
    return [text_of(event.data.content) for event in session_events if type(event) is AssistantMessageEvent]


def reasons(run: Any) -> list[Any]:
    return [data["reason"] for data in run.data("turn/end")]


async def test_a_429_with_retry_after_waits_that_long_then_the_turn_completes() -> None:
    limited = api_error(429, "slow down", "rate_limit_error", headers=[("Retry-After", "2")])
    async with stack(limited, text_reply("done")) as run:
        await run.turn()
        assert reasons(run) == [{"kind": "completed"}]
        assert answers(run.agent.session.events) == ["done"]
        assert run.data("llm/retry") == [
            {
                "turn": 1,
                "step": 1,
                "model": MODEL,
                "retry": 1,
                "maxRetries": 3,
                "delayMs": 2000,
                "failure": {"message": "slow down", "code": "RATE_LIMIT", "status": 429, "providerRetryAfterMs": 2000},
            }
        ]
        assert run.clock.waits == [2.0]
        first, second = run.bodies()
        assert first == second  # the model never sees the failed attempt
        assert [(n.attempt, n.max_attempts, n.delay_ms, n.error.status) for n in run.notices] == [(1, 4, 2000, 429)]


async def test_429s_without_retry_after_back_off_exponentially_under_the_cap() -> None:
    limited = api_error(429, "slow down", "rate_limit_error")
    config = {"baseMs": 1000, "capMs": 3000, "attempts": 5}
    async with stack(limited, limited, limited, limited, text_reply("ok"), config=config) as run:
        await run.turn()
        assert reasons(run) == [{"kind": "completed"}]
        assert [data["delayMs"] for data in run.data("llm/retry")] == [1000, 2000, 3000, 3000]
        assert next(data["failure"] for data in run.data("llm/retry")) == {
            "message": "slow down",
            "code": "RATE_LIMIT",
            "status": 429,
        }
        assert run.clock.waits == [1.0, 2.0, 3.0, 3.0]
        assert len(run.bodies()) == 5


async def test_a_500_is_retried() -> None:
    async with stack(api_error(500, "boom", "server_error"), text_reply("fine")) as run:
        await run.turn()
        assert reasons(run) == [{"kind": "completed"}]
        assert [data["failure"]["code"] for data in run.data("llm/retry")] == ["SERVER"]
        assert answers(run.agent.session.events) == ["fine"]


@pytest.mark.parametrize("ending", ["cut", "end"])
async def test_a_stream_cut_off_mid_answer_is_retried_and_its_partial_is_never_the_answer(ending: str) -> None:
    broken = Reply([TextDelta("partial ")], ending=ending)  # type: ignore[arg-type]
    async with stack(broken, text_reply("whole answer")) as run:
        await run.turn()
        assert reasons(run) == [{"kind": "completed"}]
        assert answers(run.agent.session.events) == ["whole answer"]
        retry = run.data("llm/retry")
        assert [data["failure"]["code"] for data in retry] == ["STREAM_CLOSED"]
        # the failed attempt's text stays in the log once, before the retry record, then the new attempt's
        seen = [
            "RETRY" if type(event) is LlmRetryEvent else event.data.chunk.text
            for event in run.agent.session.events
            if type(event) is LlmRetryEvent
            or (type(event) is AssistantChunkEvent and type(event.data.chunk) is TextDeltaChunk)
        ]
        assert seen == ["partial ", "RETRY", "whole answer"]
        first, second = run.bodies()
        assert first == second


async def test_a_cancel_during_the_backoff_ends_the_turn_aborted_at_once() -> None:
    async with stack(api_error(503, "busy", "server_error"), text_reply("never"), hold=True) as run:
        run.agent.send([text("hi")])
        idle = run.agent.when_idle()
        async with asyncio.timeout(10):
            await run.clock.waiting.wait()
            run.agent.cancel()
            await idle
        assert reasons(run) == [{"kind": "aborted", "reason": "cancelled"}]
        assert len(run.bodies()) == 1
        assert answers(run.agent.session.events) == []
        assert len(run.data("llm/retry")) == 1


async def test_a_401_is_not_retried() -> None:
    async with stack(api_error(401, "bad key", "authentication_error"), text_reply("never")) as run:
        await run.turn()
        assert reasons(run) == [{"kind": "error", "message": "bad key", "code": "AUTH"}]
        assert run.data("llm/retry") == []
        assert run.clock.waits == []
        assert len(run.bodies()) == 1


async def test_the_attempts_run_out_and_the_last_failure_ends_the_turn() -> None:
    boom = api_error(500, "boom", "server_error")
    async with stack(boom, boom, text_reply("late"), config={"attempts": 2}) as run:
        await run.turn()
        assert reasons(run) == [{"kind": "error", "message": "boom", "code": "SERVER"}]
        assert [(data["retry"], data["maxRetries"]) for data in run.data("llm/retry")] == [(1, 1)]
        assert len(run.bodies()) == 2


async def test_a_retry_after_beyond_the_cap_is_not_retried_sooner() -> None:
    limited = api_error(429, "come back tomorrow", "rate_limit_error", headers=[("retry-after", "86400")])
    async with stack(limited, text_reply("never")) as run:
        await run.turn()
        assert reasons(run)[0]["code"] == "RATE_LIMIT"
        assert run.data("llm/retry") == []


async def test_a_model_pattern_overrides_the_default_policy() -> None:
    boom = api_error(500, "boom", "server_error")
    config = {"attempts": 2, "models": {"other-*": {"attempts": 9}, "wi*": {"attempts": 3, "baseMs": 10}}}
    async with stack(boom, boom, text_reply("third time"), config=config) as run:
        await run.turn()
        assert reasons(run) == [{"kind": "completed"}]
        assert [(data["maxRetries"], data["delayMs"]) for data in run.data("llm/retry")] == [(2, 10), (2, 20)]


async def test_a_code_left_out_of_the_policy_is_not_retried() -> None:
    async with stack(api_error(500, "boom", "server_error"), config={"codes": ["RATE_LIMIT"]}) as run:
        await run.turn()
        assert reasons(run)[0]["code"] == "SERVER"
        assert run.data("llm/retry") == []


async def test_the_openai_adapter_reports_status_and_retry_after_in_band_and_is_retried_once_per_attempt() -> None:
    limited = api_error(429, "slow down", "rate_limit_error", headers=[("retry-after-ms", "1500")])
    async with stack(limited, text_reply("done"), adapter="openai") as run:
        await run.turn()
        assert reasons(run) == [{"kind": "completed"}]
        assert run.data("llm/retry")[0]["failure"] == {
            "message": "slow down",
            "code": "RATE_LIMIT",
            "status": 429,
            "providerRetryAfterMs": 1500,
        }
        finish = next(data["chunk"] for data in run.data("assistant/chunk") if data["chunk"]["type"] == "finish")
        assert finish["reason"] == {
            "kind": "error",
            "message": "slow down",
            "code": "RATE_LIMIT",
            "status": 429,
            "retryAfter": 1.5,
        }
        assert len(run.bodies()) == 2  # the SDK itself sent no retry


async def test_unloading_the_plugin_during_a_wait_lets_the_failure_stand() -> None:
    async with stack(api_error(500, "boom", "server_error"), text_reply("never"), hold=True) as run:
        run.agent.send([text("hi")])
        idle = run.agent.when_idle()
        async with asyncio.timeout(10):
            await run.clock.waiting.wait()
            await run.retry.dispose()
            await idle
        assert reasons(run) == [{"kind": "error", "message": "boom", "code": "SERVER"}]
        assert len(run.bodies()) == 1
