"""Server-sent events, as DeepSeek streams them, to ``data`` payload strings (SPEC §10).

Each complete event is decoded as UTF-8, so a character split across reads is
handled (invalid bytes become U+FFFD). An event ends at the first blank line, i.e.
the first match of ``\\r?\\n\\r?\\n``; inside an event, lines split on ``\\n`` only and
lose one trailing ``\\r``. ``data:`` lines give their value (minus one leading space)
and several join with ``\\n``; comments, other fields and events without data are
skipped.

:class:`SseParser` is the synchronous, incremental parser (the adapter feeds it body
pieces as they arrive); :func:`parse_sse` is the same parser over an async byte source.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterable

from dsh.core.errors import LlmError

DONE = "[DONE]"
"""The payload that ends a stream."""


def _line_value(line: bytes) -> bytes | None:
    """The value of one ``data:`` line (its trailing ``\\r`` already gone), else None."""
    if line.startswith(b"data:"):
        return line[6:] if line.startswith(b"data: ") else line[5:]
    return None


def _payload(event: bytes) -> str | None:
    """The joined ``data`` values of one complete event, decoded; None when it has none."""
    if event[:6] == b"data: " and 10 not in event and 13 not in event:  # the common shape: one line
        return event[6:].decode("utf-8", "replace")
    data: list[bytes] = []
    for raw in event.split(b"\n"):
        value = _line_value(raw[:-1] if raw.endswith(b"\r") else raw)
        if value is not None:
            data.append(value)
    return b"\n".join(data).decode("utf-8", "replace") if data else None


class SseParser:
    """Incremental SSE parsing: bytes in, payload strings out, up to ``[DONE]``.

    :meth:`feed` takes the next piece of the body and returns the payloads of the
    events it completed; :meth:`finish` ends the body. Once ``[DONE]`` has been
    returned (always last in its list) :attr:`done` is true and further input is
    ignored. Events are split on bytes (the separators are ASCII, which never occurs
    inside a multi-byte UTF-8 sequence) and each complete event is decoded on its own,
    so a character split across pieces is whole again by then. One parser per stream.
    """

    __slots__ = ("_buffer", "done")

    def __init__(self) -> None:
        self._buffer = b""
        self.done = False
        """Whether ``[DONE]`` has been returned."""

    def feed(self, data: bytes) -> list[str]:
        """The payloads of the events ``data`` completes (possibly none)."""
        if self.done:
            return []
        buffer = self._buffer + data if self._buffer else data
        if 13 in buffer:  # a "\r": separators may be "\r\n\r\n", "\n\r\n" or "\r\n\n"
            return self._scan(buffer)
        *events, self._buffer = buffer.split(b"\n\n")
        return self._payloads(events)

    def _payloads(self, events: list[bytes]) -> list[str]:
        payloads: list[str] = []
        for event in events:
            payload = _payload(event)
            if payload is not None:
                payloads.append(payload)
                if payload == DONE:
                    self.done = True
                    self._buffer = b""
                    break
        return payloads

    def _scan(self, buffer: bytes) -> list[str]:
        """Split ``buffer`` at the first match of ``\\r?\\n\\r?\\n``, again and again."""
        events: list[bytes] = []
        start = search = 0
        while (newline := buffer.find(b"\n", search)) >= 0:
            after = newline + 1
            following = buffer[after : after + 2]
            if following[:1] == b"\n":
                end = after + 1
            elif following == b"\r\n":
                end = after + 2
            elif following == b"\r":  # "\n\r" ends the piece: wait for the next one
                break
            else:
                search = after
                continue
            cut = newline - 1 if newline > start and buffer[newline - 1] == 13 else newline  # 13: "\r"
            events.append(buffer[start:cut])
            start = search = end
        self._buffer = buffer[start:]
        return self._payloads(events)

    def finish(self) -> list[str]:
        """The payload of a final event left without its blank line, if any, now that the body ended.

        The caller decides what a body that ended before ``[DONE]`` means: :attr:`done`
        stays false then (:func:`parse_sse` raises ``STREAM_CLOSED``).
        """
        if self.done:
            return []
        payload = _payload(self._buffer)
        self._buffer = b""
        if payload is None:
            return []
        self.done = payload == DONE
        return [payload]


async def parse_sse(source: AsyncIterable[bytes]) -> AsyncGenerator[str, None]:
    """Yield each event's payload; return right after yielding ``[DONE]``.

    A final event without its blank line is still parsed when the source ends. If the
    source ends before ``[DONE]`` this raises ``LlmError`` code ``STREAM_CLOSED``.
    Errors raised by ``source`` propagate unchanged. Closing this generator does not
    close ``source``: its owner does that.
    """
    parser = SseParser()
    async for data in source:
        for payload in parser.feed(data):
            yield payload
        if parser.done:
            return
    for payload in parser.finish():
        yield payload
    if not parser.done:
        raise LlmError("SSE stream ended without [DONE]", "STREAM_CLOSED")
