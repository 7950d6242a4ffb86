"""dsh.core.redact: credentials are scrubbed from texts before they are stored."""

from __future__ import annotations

import pytest

from dsh.core.redact import MIN_SECRET_LENGTH, REDACTED, redact_secrets, register_secret


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Incorrect API key provided: sk-abcdef1234567890.", f"Incorrect API key provided: {REDACTED}."),
        ("authorization: Bearer abc.def-ghi", f"authorization: Bearer {REDACTED}"),
        ("cannot reach postgres://bob:hunter2@db:5432/x", f"cannot reach postgres://bob:{REDACTED}@db:5432/x"),
        ("login failed: password=hunter2 next", f"login failed: password={REDACTED} next"),
        ('PGPASSWORD: "s3cr3t"', f'PGPASSWORD: "{REDACTED}"'),
        ("key AKIAIOSFODNN7EXAMPLE leaked", f"key {REDACTED} leaked"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123", f"token {REDACTED}"),
        ("api_key=abc&x=1", f"api_key={REDACTED}&x=1"),
    ],
)
def test_credential_shapes_are_redacted(text: str, expected: str) -> None:
    assert redact_secrets(text) == expected
    assert redact_secrets(expected) == expected


@pytest.mark.parametrize(
    "text", ["https://example.com/a:b", "plain text, token count 3", "max_tokens: 100", "HTTP 401 Unauthorized"]
)
def test_ordinary_texts_are_left_alone(text: str) -> None:
    assert redact_secrets(text) == text


def test_registered_values_are_redacted_wherever_they_appear() -> None:
    register_secret("plain-looking-key-0042")
    register_secret("short")
    register_secret(None)
    assert redact_secrets("echoed plain-looking-key-0042 back") == f"echoed {REDACTED} back"
    assert len("short") < MIN_SECRET_LENGTH
    assert redact_secrets("a short text") == "a short text"
