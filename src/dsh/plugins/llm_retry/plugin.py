"""``llm-retry``: a failed model request is sent again, with backoff, by policy.

The plugin listens on ``agent/request-error`` (the loop offers every failed model
request of a step there) and owns the decision for a failure whose ``code`` is in the
policy's ``codes`` while the step has requests left and the wait is within the cap
(see :mod:`.policy`). For such a failure it logs one ``llm/retry`` event (see
:mod:`.events`), emits ``agent/retry`` for UIs, waits, and answers True: the loop sends
the very same request again in the same step. Anything else is passed on (``next()``),
so the failure ends the turn as before.

What the model sees: never a failed attempt. The request is resent unchanged; the
failed attempt's chunks stay in the log as ``assistant/chunk`` records of the step
(a retry after a partial stream included: they are never assembled into an
``assistant/message``), followed by the ``llm/retry`` that discards them.

Cancellation: the wait runs inside the step's abort race, so ``cancel()``, Ctrl-C or
ACP ``session/cancel`` interrupts it at once and the turn ends ``aborted``. Unloading
the plugin ends pending waits too; their failures then stand (no retry is answered
after the plugin is gone).

The clock is injectable: :func:`retry_plugin` builds the plugin with another
``sleep`` and ``uniform`` (tests pass a fake clock); this module's ``apply`` uses
``asyncio.sleep`` and ``random.uniform``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

from msgspec import UNSET

from dsh.core.agent import AGENT_REQUEST_ERROR, AGENT_RETRY, Agent, RequestFailure, RetryNotice
from dsh.core.redact import redact_secrets
from dsh.core.session import register_event_type
from dsh.kernel import Context, PluginSpec
from dsh.plugins.llm_retry.events import LlmFailure, LlmRetryData, LlmRetryEvent
from dsh.plugins.llm_retry.policy import Config, Uniform, delay_ms

name = "llm-retry"

Sleep = Callable[[float], Awaitable[Any]]
"""Wait that many seconds (``asyncio.sleep``; a test passes a fake clock's)."""


def retry_plugin(sleep: Sleep = asyncio.sleep, uniform: Uniform = random.uniform) -> PluginSpec:
    """The ``llm-retry`` plugin with its clock: ``sleep`` waits, ``uniform`` draws the jitter."""

    def start(ctx: Context, config: Config) -> None:
        install(ctx, config, sleep, uniform)

    return PluginSpec(name=name, apply=start, Config=Config)


def apply(ctx: Context, config: Config) -> None:
    """Install the policy with the real clock; see the module docstring."""
    install(ctx, config, asyncio.sleep, random.uniform)


def install(ctx: Context, config: Config, sleep: Sleep, uniform: Uniform) -> None:
    """Register ``llm/retry`` and the ``agent/request-error`` listener on ``ctx``'s fiber."""
    waits: set[asyncio.Future[Any]] = set()

    def end_waits() -> None:
        for wait in list(waits):
            wait.cancel()

    ctx.effect(lambda: register_event_type(LlmRetryEvent), "llm/retry event type")
    ctx.effect(lambda: end_waits, "llm-retry waits")

    async def on_error(
        agent: Agent, turn: int, step: int, failure: RequestFailure, proceed: Callable[[], Awaitable[bool]]
    ) -> bool:
        error = failure.error
        model = failure.request.model
        policy = config.policy(model)
        attempt = failure.attempt
        if error.code not in policy.codes or attempt >= policy.attempts:
            return await proceed()
        delay = delay_ms(policy, attempt, error.retry_after, uniform)
        if delay is None:
            return await proceed()
        agent.session.append(
            LlmRetryEvent,
            LlmRetryData(
                turn=turn,
                step=step,
                model=model,
                retry=attempt,
                max_retries=policy.attempts - 1,
                delay_ms=delay,
                failure=_failure(failure),
            ),
        )
        ctx.emit(AGENT_RETRY, agent, turn, step, RetryNotice(attempt, policy.attempts, delay, error))
        wait = asyncio.ensure_future(sleep(delay / 1000))
        waits.add(wait)
        try:
            await asyncio.wait((wait,))
        finally:
            waits.discard(wait)
            wait.cancel()  # the step was aborted: stop the clock too
        if wait.cancelled():  # the plugin was unloaded during the wait: the failure stands
            return False
        wait.result()  # a clock that failed fails the step
        return True

    ctx.on(AGENT_REQUEST_ERROR, on_error)


def _failure(failure: RequestFailure) -> LlmFailure:
    error = failure.error
    status = error.status
    after = error.retry_after
    return LlmFailure(
        message=redact_secrets(error.message),
        code=error.code,
        status=UNSET if status is None else status,
        provider_retry_after_ms=UNSET if after is None else round(after * 1000),
    )
