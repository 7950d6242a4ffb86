"""The plugin's session event: ``llm/retry``, one per scheduled retry (durable, never model-visible).

Logged inside the failing step, after that attempt's ``assistant/chunk`` events and
before the wait; the payload says what was scheduled, not that the next request
succeeded (a cancel during the wait shows on ``turn/end``)::

    {"type":"llm/retry","seq":9,"time":0,"data":{"turn":1,"step":1,"model":"deepseek-v4-flash",
     "retry":1,"maxRetries":3,"delayMs":2000,
     "failure":{"message":"rate limited","code":"RATE_LIMIT","status":429,"providerRetryAfterMs":2000}}}
"""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType

from dsh.core.session import SessionEventBase


class LlmFailure(Struct, frozen=True, kw_only=True, rename="camel"):
    """What the failed request reported: message, code, HTTP status and the provider's delay (ms)."""

    message: str
    code: str
    status: int | UnsetType = UNSET
    provider_retry_after_ms: int | UnsetType = UNSET


class LlmRetryData(Struct, frozen=True, kw_only=True, rename="camel"):
    """One scheduled retry: ``retry`` is the failed request's number in its step (from 1)."""

    turn: int
    step: int
    model: str
    retry: int
    max_retries: int
    delay_ms: int
    failure: LlmFailure


class LlmRetryEvent(SessionEventBase, frozen=True, tag="llm/retry"):
    """``llm/retry``: see the module docstring."""

    data: LlmRetryData
