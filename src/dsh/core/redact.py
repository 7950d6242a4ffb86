"""Scrub credentials out of texts before they are stored or shown (error messages above all).

:func:`redact_secrets` replaces what looks like a credential with ``[REDACTED]``:

* provider API keys (``sk-…``), GitHub tokens (``ghp_…``, ``github_pat_…``), AWS access
  key ids (``AKIA…``) and ``Bearer …`` authorization values;
* the value of ``password=`` / ``token: `` / ``api_key=``-style assignments;
* the password of a URL's userinfo (``postgres://user:[REDACTED]@host``);
* every value handed to :func:`register_secret` (an adapter registers the API key it was
  configured with, so a server that echoes the key back cannot get it into a log).

The registry is process-wide and only grows; values shorter than
:data:`MIN_SECRET_LENGTH` are ignored (redacting ``"x"`` everywhere would destroy texts).
Redaction never raises and is idempotent.
"""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"
"""What a credential is replaced with."""

MIN_SECRET_LENGTH = 8
"""Registered values shorter than this are not redacted on their own."""

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=-]+", re.IGNORECASE), f"Bearer {REDACTED}"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), REDACTED),
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,})"), REDACTED),
    (re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), REDACTED),
    (re.compile(r"(?<=://)([^/\s:@]*):[^/\s@]+@"), rf"\1:{REDACTED}@"),
    (
        re.compile(
            r"\b([A-Za-z0-9_]*(?:password|passwd|pwd|secret|token|api[_-]?key)\b[\"']?\s*[=:]\s*[\"']?)"
            r"(?!\[REDACTED\])[^\s\"'&,;]+",
            re.IGNORECASE,
        ),
        rf"\1{REDACTED}",
    ),
)

_known: set[str] = set()


def register_secret(value: str | None) -> None:
    """Redact ``value`` wherever it appears from now on (None and short values are ignored)."""
    if value is not None and len(value) >= MIN_SECRET_LENGTH:
        _known.add(value)


def redact_secrets(text: str) -> str:
    """``text`` with every registered secret and credential-shaped value replaced by ``[REDACTED]``."""
    for secret in sorted(_known, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text
