"""Reading a session log for compaction: sizes, the current cut, prunable results, balanced cuts.

Pure functions over the logged events (``events[i].seq == i``); nothing here appends.
Sizes are estimates in tokens: the encoded JSON length over four (a chars/4 meter),
used where the provider has not measured (see :mod:`.meter`).

A *cut* at seq ``p`` keeps ``events[p:]`` verbatim and summarizes what lies before.
A cut is *balanced* when every tool call of an assistant message before ``p`` has its
result before ``p``: :func:`cut_points` offers only such cuts, at a user or assistant
message, so a derived history never holds a tool call without its result or a
result without its call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import msgspec
from msgspec import UNSET

from dsh.core.llm import ContentBlock, Message, TextBlock, ToolCallBlock, ToolSchema, text_of
from dsh.core.session import (
    AssistantMessageEvent,
    CompactionEvent,
    ContextMessageEvent,
    PrunedResult,
    SessionEvent,
    SteeringMessageEvent,
    ToolResultEvent,
    UserMessageEvent,
)

_encode = msgspec.json.Encoder().encode

_MESSAGE_EVENTS = (UserMessageEvent, AssistantMessageEvent, ToolResultEvent, ContextMessageEvent, SteeringMessageEvent)


def estimate(value: object) -> int:
    """The estimated token count of ``value`` (a message, a list of them, a schema): JSON bytes / 4."""
    return len(_encode(value)) // 4


def estimate_request(system: str | None, tools: Sequence[ToolSchema] | None, messages: Sequence[Message]) -> int:
    """The estimated size of a request with this system prompt, tools and messages."""
    return estimate(system or "") + (estimate(tools) if tools else 0) + estimate(messages)


@dataclass(frozen=True, slots=True)
class LogView:
    """What the logged compactions left the model: the first verbatim seq, and the results already pruned."""

    kept_from: int
    pruned: frozenset[int]


def log_view(events: Sequence[SessionEvent]) -> LogView:
    """The effect of every successful ``compaction`` in ``events`` (as derivation reads them)."""
    kept_from = 0
    pruned: set[int] = set()
    for event in events:
        if type(event) is CompactionEvent and event.data.error is UNSET:
            data = event.data
            pruned.update(entry.original_seq for entry in data.pruned)
            if data.summary is not UNSET:
                kept_from = event.seq if data.kept_from is UNSET else data.kept_from
            elif data.kept_from is not UNSET:
                kept_from = data.kept_from
    return LogView(kept_from, frozenset(pruned))


def event_size(event: SessionEvent) -> int:
    """The estimated size of the message a message-producing event derives (0 for any other event)."""
    return estimate(event.data) if isinstance(event, _MESSAGE_EVENTS) else 0


def cut_points(events: Sequence[SessionEvent], start: int) -> list[int]:
    """The balanced cuts after ``start``, in log order (see the module docstring)."""
    open_calls: set[str] = set()
    points: list[int] = []
    for event in events[start:]:
        if type(event) is AssistantMessageEvent or type(event) is UserMessageEvent:
            if not open_calls and event.seq > start:
                points.append(event.seq)
            if type(event) is AssistantMessageEvent:
                open_calls.update(block.id for block in event.data.content if type(block) is ToolCallBlock)
        elif type(event) is ToolResultEvent:
            open_calls.discard(event.data.call_id)
    return points


def tail_start(events: Sequence[SessionEvent], start: int, budget: int) -> int:
    """The seq from which the events after ``start`` hold at least ``budget`` estimated tokens (``start`` if never)."""
    total = 0
    for seq in range(len(events) - 1, start - 1, -1):
        total += event_size(events[seq])
        if total >= budget:
            return seq
    return start


def choose_cut(events: Sequence[SessionEvent], start: int, budget: int | None) -> int | None:
    """The cut keeping the smallest balanced tail of at least ``budget`` tokens; None if nothing can go.

    ``budget`` None, or a history too small for it, keeps the newest unit only (the
    deepest balanced cut). A cut must leave at least one answer of the model before it
    (a summary of a lone prompt would only say it again).
    """
    points = [p for p in cut_points(events, start) if _has_answer(events, start, p)]
    if not points:
        return None
    if budget is None:
        return points[-1]
    boundary = tail_start(events, start, budget)
    fitting = [p for p in points if p <= boundary]
    return fitting[-1] if fitting else points[-1]


def _has_answer(events: Sequence[SessionEvent], start: int, end: int) -> bool:
    return any(type(event) is AssistantMessageEvent for event in events[start:end])


def pruned_content(content: tuple[ContentBlock, ...], keep: int) -> tuple[str, tuple[ContentBlock, ...]]:
    """``content``'s text cut to its first and last ``keep`` characters with a note; other blocks follow it."""
    text = text_of(content)
    cut = len(text) - 2 * keep
    note = f"[… {cut} characters of this tool result cut by compaction …]"
    shortened = f"{text[:keep]}\n\n{note}\n\n{text[-keep:] if keep else ''}"
    others = tuple([block for block in content if type(block) is not TextBlock])
    return text, (TextBlock(text=shortened), *others)


def prunable(events: Sequence[SessionEvent], view: LogView, end: int, limit: int, keep: int) -> list[PrunedResult]:
    """Shortened versions of the tool results in ``[view.kept_from, end)`` with more than ``limit`` text characters."""
    entries: list[PrunedResult] = []
    for event in events[view.kept_from : end]:
        if type(event) is ToolResultEvent and event.seq not in view.pruned:
            content = event.data.content
            if sum(len(block.text) for block in content if type(block) is TextBlock) > limit:
                text, shortened = pruned_content(content, keep)
                entries.append(
                    PrunedResult(
                        original_seq=event.seq,
                        call_id=event.data.call_id,
                        chars_before=len(text),
                        chars_after=len(text_of(shortened)),
                        content=shortened,
                    )
                )
    return entries
