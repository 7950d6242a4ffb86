"""What ``dsh run`` prints while the agent works.

* :class:`TextAnswer`: the model's text streamed to stdout as it arrives (reasoning
  is not printed), with one line per tool call and result on stderr;
* :class:`EventLines`: every session event appended during the run, one compact JSON
  line each on stdout (``--json``), exactly as the JSONL log stores it.

Both listen on the booted root, ignore other agents and sessions, and never raise
into the loop: a closed stdout (``dsh run ... | head``) stops the printing and calls
``on_broken`` once (``dsh run`` then cancels the turn and :func:`detach_stdout`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import Any

from dsh.core.agent import AGENT_STREAM_CHUNK, Agent
from dsh.core.llm import ContentBlock, StreamChunk, TextDeltaChunk, text_of
from dsh.core.persistence import event_text
from dsh.core.session import SESSION_EVENT, Session, SessionEvent, ToolCallEvent, ToolResultEvent
from dsh.kernel import Context

RESULT_PREVIEW = 200
"""How many characters of a tool result's first line ``dsh run`` shows on stderr."""


def _write(stream: Any, text: str) -> bool:
    """Write and flush ``text``; False when the stream is gone."""
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):
        return False
    return True


def detach_stdout() -> None:
    """Point file descriptor 1 at ``/dev/null``: what is still buffered or written later goes nowhere.

    After the reader of stdout went away, this keeps the flush at interpreter exit
    from failing with a broken pipe. It changes the process's descriptor 1: only a
    command that owns the process calls it.
    """
    import os

    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)


def _nothing() -> None:
    return None


def _result_line(content: Iterable[ContentBlock]) -> str:
    joined = text_of(content)
    lines = joined.strip("\n").split("\n")
    first = lines[0]
    if len(first) > RESULT_PREVIEW:
        first = first[:RESULT_PREVIEW] + "…"
    more = len(lines) - 1
    return first + (f" (+{more} more line{'s' if more != 1 else ''})" if more else "")


class TextAnswer:
    """Streams ``agent``'s text to stdout and its tool activity to stderr (see the module docstring)."""

    def __init__(self, root: Context, agent: Agent, on_broken: Callable[[], None] = _nothing) -> None:
        self.agent = agent
        self.on_broken = on_broken
        self.wrote = False
        self.at_line_start = True
        self.broken = False
        self._step: tuple[int, int] | None = None
        root.on(AGENT_STREAM_CHUNK, self.on_chunk)
        root.on(SESSION_EVENT, self.on_event)

    def _out(self, text: str) -> None:
        if self.broken or not text:
            return
        if not _write(sys.stdout, text):
            self.broken = True
            self.on_broken()
            return
        self.wrote = True
        self.at_line_start = text.endswith("\n")

    def end_line(self) -> None:
        """End a partly written line of text (before stderr output, and at the end of the run)."""
        if not self.at_line_start:
            self._out("\n")

    def on_chunk(self, agent: Agent, turn: int, step: int, chunk: StreamChunk) -> None:
        if agent is not self.agent or type(chunk) is not TextDeltaChunk:
            return
        if self._step is not None and self._step != (turn, step):
            self.end_line()
        self._step = (turn, step)
        self._out(chunk.text)

    def on_event(self, session: Session, event: SessionEvent) -> None:
        if session is not self.agent.session:
            return
        if type(event) is ToolCallEvent:
            self.end_line()
            _write(sys.stderr, f"[tool call] {event.data.name}({event.data.arguments})\n")
        elif type(event) is ToolResultEvent:
            flag = " (error)" if event.data.is_error else ""
            _write(sys.stderr, f"[tool result{flag}] {_result_line(event.data.content)}\n")


class EventLines:
    """Prints each event appended to ``session`` as its JSONL line (see the module docstring)."""

    def __init__(self, root: Context, session: Session, on_broken: Callable[[], None] = _nothing) -> None:
        self.session = session
        self.on_broken = on_broken
        self.broken = False
        root.on(SESSION_EVENT, self.on_event)

    def on_event(self, session: Session, event: SessionEvent) -> None:
        if session is not self.session or self.broken:
            return
        line = event_text(event)
        if not _write(sys.stdout, line + "\n"):
            self.broken = True
            self.on_broken()
