"""The retry policy: which failures are retried, how often, and how long to wait.

A :class:`Policy` is resolved per model from the plugin :class:`Config`: the top-level
fields are the default, and the first ``models`` pattern (``fnmatch`` style, e.g.
``deepseek-*``) matching the request's model overrides the fields it sets.

The wait before retry *n* (the *n*-th failed request of a step, from 1) is the
provider's ``Retry-After`` when it gave one, unjittered; a ``Retry-After`` longer than
``cap_ms`` is not retried at all (retrying sooner would ignore the provider). Otherwise
it is exponential backoff with full jitter: a uniform draw from
``[0, min(cap_ms, base_ms * 2 ** (n - 1))]``.
"""

from __future__ import annotations

from collections.abc import Callable
from fnmatch import fnmatchcase

from pydantic import BaseModel, ConfigDict, Field

TRANSIENT_CODES: tuple[str, ...] = ("RATE_LIMIT", "SERVER", "TIMEOUT", "NETWORK", "STREAM_CLOSED", "EMPTY_RESPONSE")
"""The ``LlmError`` codes retried by default: a provider may answer the same request next time."""

DEFAULT_ATTEMPTS = 4
"""Requests per step at most (the first and three retries)."""

DEFAULT_BASE_MS = 1000
"""The backoff bound of the first retry, in milliseconds (it doubles per retry)."""

DEFAULT_CAP_MS = 30_000
"""The longest wait, in milliseconds (backoff bound and ``Retry-After`` limit)."""

Uniform = Callable[[float, float], float]
"""A uniform draw from ``[low, high]`` (``random.uniform``; a test passes its own)."""


class Policy(BaseModel):
    """One resolved policy: ``attempts`` requests per step at most, waits from ``base_ms`` up to ``cap_ms``."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    attempts: int = Field(default=DEFAULT_ATTEMPTS, ge=1)
    base_ms: int = Field(default=DEFAULT_BASE_MS, ge=0, alias="baseMs")
    cap_ms: int = Field(default=DEFAULT_CAP_MS, ge=0, alias="capMs")
    codes: tuple[str, ...] = TRANSIENT_CODES


class Override(BaseModel):
    """The fields of a ``models`` entry; what it leaves out comes from the default policy."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    attempts: int | None = Field(default=None, ge=1)
    base_ms: int | None = Field(default=None, ge=0, alias="baseMs")
    cap_ms: int | None = Field(default=None, ge=0, alias="capMs")
    codes: tuple[str, ...] | None = None


class Config(Policy):
    """The plugin's config: the default policy, plus ``models``: pattern -> override, first match wins."""

    models: dict[str, Override] = Field(default_factory=dict)

    def policy(self, model: str) -> Policy:
        """The policy for requests to ``model``."""
        base = Policy(attempts=self.attempts, base_ms=self.base_ms, cap_ms=self.cap_ms, codes=self.codes)
        for pattern, override in self.models.items():
            if fnmatchcase(model, pattern):
                return base.model_copy(update=override.model_dump(exclude_none=True))
        return base


def delay_ms(policy: Policy, attempt: int, retry_after: float | None, uniform: Uniform) -> int | None:
    """The wait in milliseconds before the request after failed ``attempt``; None: do not retry.

    See the module docstring; ``uniform`` draws the jitter.
    """
    if retry_after is not None:
        wanted = round(retry_after * 1000)
        return wanted if wanted <= policy.cap_ms else None
    bound = min(policy.cap_ms, policy.base_ms * 2 ** (attempt - 1))
    return round(uniform(0.0, float(bound)))
