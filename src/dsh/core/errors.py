"""The one error tree of dsh.

Every error dsh raises on purpose derives from :class:`HarnessError` and carries a
stable machine-readable ``code`` beside its human message::

    Exception
     └── HarnessError(message, code, cause)        code e.g. "UNKNOWN", "ABORTED"
          ├── LlmError(message, code, status,      NO_ADAPTER, DUPLICATE_ADAPTER, UNSUPPORTED, AUTH,
          │            retry_after)                RATE_LIMIT, INVALID_REQUEST, SERVER, HTTP_<n>,
          │                                        EMPTY_RESPONSE, STREAM_CLOSED, MALFORMED_RESPONSE,
          │                                        CONTEXT_WINDOW_EXCEEDED
          ├── ToolArgsError(violations)            INVALID_ARGS
          ├── ToolNotFoundError(tool_name)         UNKNOWN_TOOL
          └── InvariantError(detail)               INVARIANT

Lower-layer exceptions (httpx, sqlite3, OSError, pydantic) are translated at the seam
that meets them, keeping the original as ``__cause__``.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from email.utils import parsedate_to_datetime
from typing import Any, NoReturn

import msgspec


class HarnessError(Exception):
    """Base of every deliberate dsh error.

    ``code`` is stable and distinct from the message; ``cause`` (also set as
    ``__cause__``) is the error this one wraps, if any. ``name`` is the concrete
    class name, so code can switch on it without importing every subclass.
    """

    def __init__(self, message: str, code: str = "UNKNOWN", cause: object = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.cause = cause
        if isinstance(cause, BaseException):
            self.__cause__ = cause

    @property
    def name(self) -> str:
        return type(self).__name__

    def __str__(self) -> str:
        return self.message


def is_harness_error(value: object) -> bool:
    """True when ``value`` is a :class:`HarnessError` (of any subclass)."""
    return isinstance(value, HarnessError)


class LlmError(HarnessError):
    """A model-provider failure.

    ``status`` is the HTTP status when one applies; ``retry_after`` is the delay in
    seconds the provider asked for before another request (its ``Retry-After``), if
    it named one (see :func:`retry_after_seconds`). Both are facts the adapter saw:
    whether to retry is a policy's decision, never the adapter's.
    """

    def __init__(
        self,
        message: str,
        code: str,
        status: int | None = None,
        cause: object = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message, code, cause)
        self.status = status
        self.retry_after = retry_after


CONTEXT_WINDOW_EXCEEDED = "CONTEXT_WINDOW_EXCEEDED"
"""The ``LlmError`` code of a request the provider refused because it exceeds the model's context window."""

_CONTEXT_OVERFLOW = re.compile(
    r"context[\s_-](?:length|window)[\s_-]*(?:exceed|overflow|limit[\s_-]exceeded)"
    r"|(?:maximum|max)(?:\s+(?:allowed|supported))?\s+context\s+(?:length|window)"
    r"|(?:request|prompt|input|messages?)\s+(?:is\s+|are\s+)?too\s+(?:long|large)\s+for\s+(?:(?:this|the)\s+)?"
    r"(?:model(?:'s)?\s+)?(?:context|model)",
    re.IGNORECASE,
)


def is_context_window_exceeded(detail: str) -> bool:
    """True when a provider's error text (message, code or type) says the request exceeds the context window.

    DeepSeek answers such a request with HTTP 400 and ``This model's maximum context
    length is 131072 tokens. However, you requested ...``; OpenAI-compatible servers
    say ``context_length_exceeded`` or ``prompt is too long for the model``. Adapters
    map a match to :data:`CONTEXT_WINDOW_EXCEEDED` instead of ``INVALID_REQUEST``.
    """
    return _CONTEXT_OVERFLOW.search(detail) is not None


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The delay a provider's response headers ask for, in seconds (>= 0), or None.

    Reads ``retry-after-ms`` (milliseconds, an OpenAI-style extension) first, then
    ``Retry-After``: delta seconds (a decimal fraction is accepted) or an HTTP date,
    measured from ``now`` (epoch seconds; the wall clock by default) and never
    negative. ``headers`` must look names up case-insensitively (aiohttp and httpx
    headers do). A missing, negative or unreadable value gives None.
    """
    millis = _number(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _number(value)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:  # an obsolete date form without a zone: HTTP dates are GMT
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _number(value: str | None) -> float | None:
    try:
        number = float(value) if value is not None else math.nan
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


class ToolArgsError(HarnessError):
    """A tool call whose arguments violate the tool's schema (code ``INVALID_ARGS``)."""

    def __init__(self, violations: Sequence[str]) -> None:
        self.violations = list(violations)
        super().__init__(f"invalid arguments: {'; '.join(self.violations)}", "INVALID_ARGS")


class ToolNotFoundError(HarnessError):
    """A call to a tool nobody registered (code ``UNKNOWN_TOOL``)."""

    def __init__(self, tool_name: str) -> None:
        self.tool_name = tool_name
        super().__init__(f'unknown tool "{tool_name}"', "UNKNOWN_TOOL")


class InvariantError(HarnessError):
    """A broken event contract detected by the invariants plugin (code ``INVARIANT``)."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"invariant violated: {detail}", "INVARIANT")


def _plain(value: object) -> Any:
    """A typed value (a ``msgspec.Struct`` or the raw JSON of an unknown variant) as plain JSON data."""
    if isinstance(value, msgspec.Raw):
        return msgspec.json.decode(value)
    if isinstance(value, msgspec.Struct):
        return msgspec.to_builtins(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _describe(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_plain)
    except (TypeError, ValueError):
        return str(value)


def assert_never(value: object, context: str | None = None) -> NoReturn:
    """Raise because ``value`` escaped a closed union at run time.

    The message names the context and shows the value as JSON when it can (typed
    values as their wire JSON): ``unreachable variant in BlockAssembler.push:
    {"type":"rogue"}``.
    """
    where = f" in {context}" if context else ""
    shown = "undefined" if value is None else _describe(value)
    raise HarnessError(f"unreachable variant{where}: {shown}", "UNREACHABLE")


def to_error(value: object) -> BaseException:
    """Normalize anything thrown or rejected into an exception.

    Exceptions pass through unchanged (their ``code`` is kept); anything else
    becomes ``HarnessError(str(value), "UNKNOWN", cause=value)``.
    """
    if isinstance(value, BaseException):
        return value
    return HarnessError(str(value), "UNKNOWN", cause=value)


def error_message(error: BaseException) -> str:
    """The message of ``error`` as dsh reports it (``str(error)``, or the class name if empty)."""
    text = str(error)
    return text if text else type(error).__name__


def error_code(error: BaseException) -> str | None:
    """The string ``code`` attribute of ``error``, or None when it has none."""
    code: Any = getattr(error, "code", None)
    return code if isinstance(code, str) else None
