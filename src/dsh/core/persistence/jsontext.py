"""JSON text that storage can always encode as UTF-8."""

from __future__ import annotations

import re

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escape_lone_surrogates(json_text: str) -> str:
    """Return ``json_text`` with each lone surrogate written as a ``\\uXXXX`` escape.

    ``json_text`` must be serialized JSON (surrogates can then only sit inside string
    literals, where the escape means the same code unit). The result encodes to valid
    UTF-8, like the output of ``JSON.stringify``; text without surrogates is returned
    unchanged.
    """
    if json_text.isascii():  # O(1): no surrogate possible
        return json_text
    return _LONE_SURROGATE.sub(_escape, json_text)
