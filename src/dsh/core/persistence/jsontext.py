"""JSON text that storage can always encode as UTF-8, even for strings holding lone surrogates.

A Python ``str`` may hold a lone surrogate (text decoded from a reference writer's
``\\ud800`` escape, or produced by a tool), which has no UTF-8 form. The vocabulary's
encoder refuses such text; storage instead writes it as the ``\\uXXXX`` escape that
means the same code unit, like ``JSON.stringify`` does. Only values holding one pay
for the slower path.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from dsh.core.llm import encode
from dsh.core.session import SessionEvent, SessionHeader, header_line

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


def _plain(value: object) -> Any:
    """``value`` as plain JSON data, an ``Unknown`` variant decoded from its exact text."""
    return msgspec.to_builtins(value, enc_hook=msgspec.json.decode)


def _escaped_text(value: object) -> str:
    """The compact JSON text of ``value`` with lone surrogates escaped (the slow path)."""
    return escape_lone_surrogates(json.dumps(_plain(value), ensure_ascii=False, separators=(",", ":")))


def json_bytes(value: object) -> bytes:
    """The compact UTF-8 JSON of any vocabulary value; a lone surrogate is written as its escape."""
    try:
        return encode(value)
    except UnicodeEncodeError:
        return _escaped_text(value).encode()


def json_text(value: object) -> str:
    """:func:`json_bytes` as text."""
    return json_bytes(value).decode()


def event_text(event: SessionEvent) -> str:
    """The JSONL line of ``event`` (no newline), always UTF-8 encodable."""
    return json_text(event)


def data_text(event: SessionEvent) -> str:
    """The compact JSON text of ``event.data``, always UTF-8 encodable."""
    return json_text(event.data)  # type: ignore[union-attr]


def header_text(header: SessionHeader) -> str:
    """The JSONL header line of ``header`` (no newline), always UTF-8 encodable."""
    try:
        return header_line(header)
    except UnicodeEncodeError:
        return '{"type":"session",' + _escaped_text(header)[1:]
