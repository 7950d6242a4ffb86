"""SDK exceptions to in-band ``finish {kind: "error"}`` reasons.

This adapter never raises a provider failure out of the stream: it ends the stream
with an ``ErrorFinish`` whose ``code`` says what went wrong (SPEC §2.3 codes):

* before the answer (``create`` raised): an HTTP error status maps by its SDK class
  -- ``AuthenticationError`` / ``PermissionDeniedError`` ``AUTH``, ``RateLimitError``
  ``RATE_LIMIT``, ``BadRequestError`` ``INVALID_REQUEST``, ``InternalServerError``
  (any 5xx) ``SERVER``, any other status ``HTTP_<status>`` (a 400 whose message or
  code says the request exceeds the context window: ``CONTEXT_WINDOW_EXCEEDED``) -- with the message of the
  provider's error body when it has one, else ``provider API error (HTTP <status>)``,
  and the ``status`` and the ``Retry-After`` delay (``retry_after``) on the finish;
  a connection failure or timeout is ``NETWORK``, naming the URL;
* while reading the answer: a broken connection is ``STREAM_CLOSED``; an error event
  in the stream keeps the provider's message and code (``PROVIDER_ERROR`` without
  one); a payload that is not JSON is ``MALFORMED_RESPONSE``;
* anything else keeps its message, with its string ``code`` attribute or ``UNKNOWN``.
"""

from __future__ import annotations

from collections.abc import Mapping

import openai

from dsh.core.errors import (
    CONTEXT_WINDOW_EXCEEDED,
    error_code,
    error_message,
    is_context_window_exceeded,
    retry_after_seconds,
)
from dsh.core.llm import UNSET, ErrorFinish
from dsh.core.redact import redact_secrets


def status_error_code(error: openai.APIStatusError) -> str:
    """The ``LlmError`` code of an HTTP error status; see the module docstring."""
    if isinstance(error, openai.AuthenticationError | openai.PermissionDeniedError):
        return "AUTH"
    if isinstance(error, openai.RateLimitError):
        return "RATE_LIMIT"
    if isinstance(error, openai.BadRequestError):
        detail = f"{error.code or ''} {error.message}"
        return CONTEXT_WINDOW_EXCEEDED if is_context_window_exceeded(detail) else "INVALID_REQUEST"
    if isinstance(error, openai.InternalServerError):
        return "SERVER"
    return f"HTTP_{error.status_code}"


def _body_message(body: object) -> str | None:
    message = body.get("message") if isinstance(body, Mapping) else None
    return message if isinstance(message, str) and message else None


def request_failure(error: Exception) -> ErrorFinish:
    """The finish for a failure of the request, before any of the answer was read."""
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        message = redact_secrets(_body_message(error.body) or f"provider API error (HTTP {status})")
        retry_after = retry_after_seconds(error.response.headers)
        return ErrorFinish(
            message=message,
            code=status_error_code(error),
            status=status,
            retry_after=UNSET if retry_after is None else retry_after,
        )
    if isinstance(error, openai.APIConnectionError):
        cause = error.__cause__
        detail = error_message(cause) if cause is not None else error_message(error)
        message = (
            f"request to {error.request.url} failed: {detail} (check baseURL / $DEEPSEEK_BASE_URL and the network)"
        )
        return ErrorFinish(message=message, code="NETWORK")
    return other_failure(error)


def stream_failure(error: Exception) -> ErrorFinish:
    """The finish for a failure while reading the answer's stream."""
    if isinstance(error, openai.APIConnectionError):
        cause = error.__cause__
        detail = f": {error_message(cause)}" if cause is not None else ""
        return ErrorFinish(message=f"the provider's stream broke off{detail}", code="STREAM_CLOSED")
    if isinstance(error, openai.APIError):
        return ErrorFinish(message=redact_secrets(error.message), code=error.code or "PROVIDER_ERROR")
    if isinstance(error, ValueError):
        return ErrorFinish(message=f"malformed stream payload: {error}", code="MALFORMED_RESPONSE")
    return other_failure(error)


def other_failure(error: Exception) -> ErrorFinish:
    """The finish for an unexpected exception: its message, its ``code`` or ``UNKNOWN``."""
    return ErrorFinish(message=error_message(error), code=error_code(error) or "UNKNOWN")
