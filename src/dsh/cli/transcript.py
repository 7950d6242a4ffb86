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
from typing import Any

from dsh.cli.agent import describe_reason
from dsh.core.session import SessionEvent, SessionHeader

HIDDEN = frozenset({"step/start", "step/end", "assistant/chunk", "usage"})
"""Event types a transcript leaves out."""


def format_time(millis: int) -> str:
    """Epoch milliseconds as local ``YYYY-MM-DD HH:MM:SS``."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(millis / 1000))


def blocks_text(content: Iterable[Any]) -> str:
    """The text of ``content``: text blocks joined, images as ``[image]``, other blocks skipped."""
    parts: list[str] = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            parts.append(block["text"])
        elif kind == "image":
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


def _source(data: Any) -> str:
    source = data.get("source")
    kind = source.get("kind") if isinstance(source, dict) else None
    return str(kind) if kind is not None else "unknown"


def header_lines(meta: SessionHeader) -> list[str]:
    """The lines naming the session: id, creation time, workspace and parent."""
    lines = [f"session {meta['id']}", f"created {format_time(meta['createdAt'])}"]
    if "cwd" in meta:
        lines.append(f"cwd {meta['cwd']}")
    if "parentSession" in meta:
        lines.append(f"forked from {meta['parentSession']}")
    return lines


def event_lines(event: SessionEvent) -> list[str]:
    """The transcript lines of one event (none for the hidden types)."""
    kind = event["type"]
    data = event["data"]
    if kind in HIDDEN:
        return []
    if kind == "turn/start":
        return ["", f"── turn {data['turn']} ({data['trigger'].get('kind')}) ──"]
    if kind == "turn/end":
        return [f"── turn {data['turn']} ended: {describe_reason(dict(data['reason']))} ──"]
    if kind == "user/message":
        return [_labelled("user", blocks_text(data["content"]))]
    if kind == "context/message":
        return [_labelled(f"context ({_source(data)})", blocks_text(data["content"]))]
    if kind == "steering/message":
        return [_labelled(f"steering ({_source(data)})", blocks_text(data["content"]))]
    if kind == "assistant/message":
        said = blocks_text(data["content"])
        return [_labelled("assistant", said)] if said.strip() else []
    if kind == "tool/call":
        return [_arrow("→", f"{data['name']} {data['arguments']}")]
    if kind == "tool/result":
        shown = blocks_text(data["content"]) or "(no output)"
        return [_arrow("←", ("error: " if data["isError"] else "") + shown)]
    if kind == "error":
        code = data.get("code")
        return [f"  ! error: {data['message']}" + (f" [{code}]" if code else "")]
    return [f"  [{kind}]"]


def render_transcript(meta: SessionHeader, events: Sequence[SessionEvent]) -> str:
    """The whole transcript of a session, ending with a newline."""
    lines = header_lines(meta)
    for event in events:
        lines.extend(event_lines(event))
    return "\n".join(lines) + "\n"
