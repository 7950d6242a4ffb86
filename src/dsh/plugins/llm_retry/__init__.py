"""``llm-retry``: failed model requests with a transient code are sent again, with backoff.

A module plugin: load ``dsh.plugins.llm_retry`` (YAML name ``llm-retry``); it needs no
service. Config (camelCase in YAML)::

    attempts: 4          # requests per step at most
    baseMs: 1000         # backoff bound of the first retry (doubles per retry)
    capMs: 30000         # longest wait; a longer Retry-After is not retried
    codes: [RATE_LIMIT, SERVER, TIMEOUT, NETWORK, STREAM_CLOSED, EMPTY_RESPONSE]
    models:              # per model (fnmatch pattern, first match): fields to override
      deepseek-v4-pro: {attempts: 6}

See :mod:`.plugin` for the behavior, :mod:`.policy` for the waits and :mod:`.events`
for the ``llm/retry`` log event.
"""

from dsh.plugins.llm_retry.events import LlmFailure, LlmRetryData, LlmRetryEvent
from dsh.plugins.llm_retry.plugin import Sleep, apply, install, name, retry_plugin
from dsh.plugins.llm_retry.policy import (
    DEFAULT_ATTEMPTS,
    DEFAULT_BASE_MS,
    DEFAULT_CAP_MS,
    TRANSIENT_CODES,
    Config,
    Override,
    Policy,
    Uniform,
    delay_ms,
)

__all__ = [
    "DEFAULT_ATTEMPTS",
    "DEFAULT_BASE_MS",
    "DEFAULT_CAP_MS",
    "TRANSIENT_CODES",
    "Config",
    "LlmFailure",
    "LlmRetryData",
    "LlmRetryEvent",
    "Override",
    "Policy",
    "Sleep",
    "Uniform",
    "apply",
    "delay_ms",
    "install",
    "name",
    "retry_plugin",
]
