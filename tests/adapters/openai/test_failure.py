"""SDK exceptions to in-band error finishes (SPEC §11 ``maps routable HTTP-ish error messages to stable codes``).

pi-ai classified error *messages*; the SDK hands over typed exceptions, so the stable
codes follow from the exception class (and status). Exceptions are built here the way
the SDK builds them from a response; the SDK's own choice of class per status is
covered over HTTP in ``test_adapter.py``.
"""

from __future__ import annotations

import httpx2
import openai
import pytest

from dsh.adapters.openai import other_failure, request_failure, status_error_code, stream_failure
from dsh.core.errors import LlmError
from dsh.core.llm import to_json

REQUEST = httpx2.Request("POST", "http://provider.test/v1/chat/completions")


def status_error(cls: type[openai.APIStatusError], status: int) -> openai.APIStatusError:
    """The exception the SDK raises for ``status``; its ``body`` is the provider's ``error`` object."""
    response = httpx2.Response(status, request=REQUEST)
    return cls(f"Error code: {status}", response=response, body={"message": f"said {status}"})


@pytest.mark.parametrize(
    ("status", "cls", "code"),
    [
        (400, openai.BadRequestError, "INVALID_REQUEST"),
        (401, openai.AuthenticationError, "AUTH"),
        (403, openai.PermissionDeniedError, "AUTH"),
        (404, openai.NotFoundError, "HTTP_404"),
        (409, openai.ConflictError, "HTTP_409"),
        (422, openai.UnprocessableEntityError, "HTTP_422"),
        (429, openai.RateLimitError, "RATE_LIMIT"),
        (500, openai.InternalServerError, "SERVER"),
        (529, openai.InternalServerError, "SERVER"),
        (302, openai.APIStatusError, "HTTP_302"),
    ],
)
def test_maps_routable_HTTP_ish_error_messages_to_stable_codes(
    status: int, cls: type[openai.APIStatusError], code: str
) -> None:
    """mapStopReason / mapUsage / maps routable HTTP-ish error messages to stable codes"""
    error = status_error(cls, status)
    assert status_error_code(error) == code
    assert to_json(request_failure(error)) == {
        "kind": "error",
        "message": f"said {status}",
        "code": code,
        "status": status,
    }


def test_connection_failures_without_a_cause_keep_the_sdk_message() -> None:
    """a connection error the SDK raised without an underlying exception still names the URL (or says it broke off)"""
    error = openai.APIConnectionError(request=REQUEST)
    assert to_json(request_failure(error)) == {
        "kind": "error",
        "message": "request to http://provider.test/v1/chat/completions failed: Connection error. "
        "(check baseURL / $DEEPSEEK_BASE_URL and the network)",
        "code": "NETWORK",
    }
    assert to_json(stream_failure(error)) == {
        "kind": "error",
        "message": "the provider's stream broke off",
        "code": "STREAM_CLOSED",
    }
    assert request_failure(openai.APITimeoutError(REQUEST)).code == "NETWORK"


def test_unexpected_exceptions_keep_their_message_and_code() -> None:
    """anything else becomes an error finish with its message and its code, UNKNOWN without one"""
    assert to_json(stream_failure(RuntimeError("bug"))) == {"kind": "error", "message": "bug", "code": "UNKNOWN"}
    assert to_json(request_failure(LlmError("nope", "CUSTOM"))) == {
        "kind": "error",
        "message": "nope",
        "code": "CUSTOM",
    }
    assert to_json(other_failure(KeyError())) == {"kind": "error", "message": "KeyError", "code": "UNKNOWN"}
