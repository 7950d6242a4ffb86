"""Server-sent events, as DeepSeek streams them, to ``data`` payload strings (SPEC §10).

Bytes are decoded incrementally as UTF-8, so a character split across reads is
handled (invalid bytes become U+FFFD). An event ends at the first blank line, i.e.
the first match of ``\\r?\\n\\r?\\n``; inside an event, lines split on ``\\n`` only and
lose one trailing ``\\r``. ``data:`` lines give their value (minus one leading space)
and several join with ``\\n``; comments, other fields and events without data are
skipped.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import AsyncGenerator, AsyncIterable

from dsh.core.errors import LlmError

DONE = "[DONE]"
"""The payload that ends a stream."""

_EVENT_END = re.compile(r"\r?\n\r?\n")


def _payload(event: str) -> str | None:
    """The joined ``data`` values of one event, or None when it has none."""
    data: list[str] = []
    for raw in event.split("\n"):
        line = raw[:-1] if raw.endswith("\r") else raw
        if line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)
    return "\n".join(data) if data else None


async def parse_sse(source: AsyncIterable[bytes]) -> AsyncGenerator[str, None]:
    """Yield each event's payload; return right after yielding ``[DONE]``.

    A final event without its blank line is still parsed when the source ends. If the
    source ends before ``[DONE]`` this raises ``LlmError`` code ``STREAM_CLOSED``.
    Errors raised by ``source`` propagate unchanged. Closing this generator does not
    close ``source``: its owner does that.
    """
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    buffer = ""
    async for data in source:
        buffer += decoder.decode(data)
        start = 0
        while (match := _EVENT_END.search(buffer, start)) is not None:
            payload = _payload(buffer[start : match.start()])
            start = match.end()
            if payload is not None:
                yield payload
                if payload == DONE:
                    return
        buffer = buffer[start:]
    buffer += decoder.decode(b"", final=True)
    payload = _payload(buffer)
    if payload is not None:
        yield payload
        if payload == DONE:
            return
    raise LlmError("SSE stream ended without [DONE]", "STREAM_CLOSED")
