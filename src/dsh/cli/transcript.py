"""A session log as a readable transcript (``dsh sessions show``). Pure functions.

One block per turn, between a heading and a closing line::

    ── turn 1 (message) ──
    user: list the files
    assistant: I will run `ls`.
      → bash {"command":"ls","description":"List files"}
      ← a.txt
    assistant: There is one file.
    ── turn 1 ended: completed ──

Step boundaries, streamed chunks and usage are left out; event types a plugin added
are shown by name. Multi-line text is indented under its label.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from dsh.cli.agent import describe_reason
from dsh.core.llm import ContentBlock, ImageBlock, MessageSource, TextBlock, variant_tag
from dsh.core.session import (
    AssistantMessageEvent,
    ContextMessageEvent,
    ErrorEvent,
    SessionEvent,
    SessionHeader,
    SteeringMessageEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnEndEvent,
    TurnStartEvent,
    UserMessageEvent,
)

HIDDEN = frozenset({"step/start", "step/end", "assistant/chunk", "usage"})
"""Event types a transcript leaves out."""


def format_time(millis: int) -> str:
    """Epoch milliseconds as local ``YYYY-MM-DD HH:MM:SS``."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(millis / 1000))


def blocks_text(content: Iterable[ContentBlock]) -> str:
    """The text of ``content``: text blocks joined, images as ``[image]``, other blocks skipped."""
    parts: list[str] = []
    for block in content:
        if type(block) is TextBlock:
            parts.append(block.text)
        elif type(block) is ImageBlock:
            parts.append("[image]")
    return "".join(parts)


def _indented(first: str, body: str, pad: str) -> str:
    """``first`` + the first line of ``body``, later lines under ``pad`` (blank lines stay empty)."""
    head, *rest = body.rstrip("\n").split("\n")
    return "\n".join([first + head, *(pad + line if line else "" for line in rest)])


def _labelled(label: str, body: str) -> str:
    return _indented(f"{label}: ", body, " " * (len(label) + 2))


def _arrow(symbol: str, body: str) -> str:
    return _indented(f"  {symbol} ", body, "    ")


def _source(source: MessageSource) -> str:
    return variant_tag(source) or "unknown"


def header_lines(meta: SessionHeader) -> list[str]:
    """The lines naming the session: id, creation time, workspace and parent."""
    lines = [f"session {meta.id}", f"created {format_time(meta.created_at)}"]
    if isinstance(meta.cwd, str):
        lines.append(f"cwd {meta.cwd}")
    if meta.origin == "subagent":
        call = f" (call {meta.parent_call_id})" if isinstance(meta.parent_call_id, str) else ""
        lines.append(f"sub-agent of {meta.parent_session}{call}")
    elif isinstance(meta.parent_session, str):
        copied = f" (its first {meta.seed_length} events)" if isinstance(meta.seed_length, int) else ""
        lines.append(f"forked from {meta.parent_session}{copied}")
    return lines


def event_lines(event: SessionEvent) -> list[str]:
    """The transcript lines of one event (none for the hidden types; other types by name)."""
    match event:
        case TurnStartEvent(data=data):
            return ["", f"── turn {data.turn} ({variant_tag(data.trigger) or 'unknown'}) ──"]
        case TurnEndEvent(data=data):
            return [f"── turn {data.turn} ended: {describe_reason(data.reason)} ──"]
        case UserMessageEvent(data=data):
            return [_labelled("user", blocks_text(data.content))]
        case ContextMessageEvent(data=data):
            return [_labelled(f"context ({_source(data.source)})", blocks_text(data.content))]
        case SteeringMessageEvent(data=data):
            return [_labelled(f"steering ({_source(data.source)})", blocks_text(data.content))]
        case AssistantMessageEvent(data=data):
            said = blocks_text(data.content)
            return [_labelled("assistant", said)] if said.strip() else []
        case ToolCallEvent(data=data):
            return [_arrow("→", f"{data.name} {data.arguments}")]
        case ToolResultEvent(data=data):
            shown = blocks_text(data.content) or "(no output)"
            return [_arrow("←", ("error: " if data.is_error else "") + shown)]
        case ErrorEvent(data=data):
            return [f"  ! error: {data.message}" + (f" [{data.code}]" if data.code else "")]
        case _:
            return [] if event.type in HIDDEN else [f"  [{event.type}]"]


def render_transcript(meta: SessionHeader, events: Sequence[SessionEvent]) -> str:
    """The whole transcript of a session, ending with a newline."""
    lines = header_lines(meta)
    for event in events:
        lines.extend(event_lines(event))
    return "\n".join(lines) + "\n"
