"""Diffs and the display of file tool calls: pure functions, safe to rerun on replay.

Call cards carry the file as a location (the path as the model gave it; a front end
resolves a relative one against the session cwd). The result card of an edit or a
write carries the change as :class:`ToolDiff` values rebuilt from what the logged
result holds, so a replay shows the same: one diff per hunk of the unified diff the
model also sees (old and new text of the changed region with its context), or, for a
file created, the written content with no old text.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from typing import Any

from dsh.core.llm import TextBlock, text
from dsh.core.tools import ToolCallPresentation, ToolDiff, ToolLocation, ToolResult, ToolResultPresentation

MAX_DIFF_LINES = 400
"""The longest diff a result carries; the rest is summarized in one line."""


CONTEXT = 3
"""Unchanged lines shown around each change."""

_HUNK = re.compile(r"@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@")


def _trimmed(old: list[str], new: list[str]) -> tuple[int, list[str], list[str]]:
    """``(offset, old part, new part)``: the equal head and tail cut off, :data:`CONTEXT` lines of each kept.

    An edit changes a few lines of a file; the matcher then only compares the
    changed region and its context instead of the whole file.
    """
    limit = min(len(old), len(new))
    head = 0
    while head < limit and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < limit - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    start = max(0, head - CONTEXT)
    cut = max(0, tail - CONTEXT)
    return start, old[start : len(old) - cut], new[start : len(new) - cut]


def _shifted(header: str, offset: int) -> str:
    match = _HUNK.match(header)
    if match is None or offset == 0:
        return header
    old_start, old_count, new_start, new_count = match.groups()
    return f"@@ -{int(old_start) + offset}{old_count} +{int(new_start) + offset}{new_count} @@\n"


def unified_diff(old: str, new: str, shown: str) -> str:
    """A unified diff (:data:`CONTEXT` lines of context) from ``old`` to ``new``; ``""`` when equal."""
    offset, before, after = _trimmed(old.splitlines(keepends=True), new.splitlines(keepends=True))
    lines = difflib.unified_diff(before, after, f"a/{shown}", f"b/{shown}", n=CONTEXT)
    out: list[str] = []
    for line in lines:
        if line.startswith("@@ "):
            line = _shifted(line, offset)
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    if len(out) > MAX_DIFF_LINES:
        rest = len(out) - MAX_DIFF_LINES
        out = [*out[:MAX_DIFF_LINES], f"[… {rest} more diff lines]\n"]
    return "".join(out)


def fenced_diff(diff: str) -> str:
    return "```diff\n" + diff.rstrip("\n") + "\n```"


def diff_stats(diff: str) -> tuple[int, int]:
    """Lines added and removed by ``diff`` (file headers excluded)."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++ "):
            added += 1
        elif line.startswith("-") and not line.startswith("--- "):
            removed += 1
    return added, removed


def _file(args: Mapping[str, Any]) -> tuple[ToolLocation, ...]:
    return (ToolLocation(str(args["file_path"])),)


def hunk_diffs(diff: str, path: str) -> tuple[ToolDiff, ...]:
    """One :class:`ToolDiff` per hunk of the unified ``diff``: context and removed lines
    as the old text, context and added lines as the new text. A hunk cut by the
    :data:`MAX_DIFF_LINES` cap ends where the cut is."""
    hunks: list[tuple[list[str], list[str]]] = []
    sides: tuple[list[str], ...] = ()
    for line in diff.splitlines():
        if line.startswith("@@ "):
            hunks.append(([], []))
            sides = ()
        elif not hunks or line.startswith("[… "):
            continue  # the file headers before the first hunk, the cap's summary line
        elif line.startswith("\\"):  # "\ No newline at end of file": the line before has none
            for side in sides:
                side[-1] = side[-1].removesuffix("\n")
        else:
            old, new = hunks[-1]
            sides = {"-": (old,), "+": (new,)}.get(line[:1], (old, new))
            for side in sides:
                side.append(line[1:] + "\n")
    return tuple(ToolDiff(path, new_text="".join(new), old_text="".join(old)) for old, new in hunks)


def present_read(args: Mapping[str, Any]) -> ToolCallPresentation:
    offset = args.get("offset")
    limit = args.get("limit")
    where = ""
    if offset is not None or limit is not None:
        first = int(offset) if offset is not None else 1
        where = f" (from line {first})" if limit is None else f" (lines {first}-{first + int(limit) - 1})"
    line = int(offset) if offset is not None else None
    return ToolCallPresentation(
        title=f"Read {args['file_path']}{where}",
        kind="read",
        raw_input=args,
        locations=(ToolLocation(str(args["file_path"]), line),),
    )


def present_write(args: Mapping[str, Any]) -> ToolCallPresentation:
    return ToolCallPresentation(title=f"Write {args['file_path']}", kind="edit", raw_input=args, locations=_file(args))


def present_edit(args: Mapping[str, Any]) -> ToolCallPresentation:
    old = "".join(f"-{line}\n" for line in str(args["old_string"]).splitlines())
    new = "".join(f"+{line}\n" for line in str(args["new_string"]).splitlines())
    every = " (every occurrence)" if args.get("replace_all") is True else ""
    return ToolCallPresentation(
        title=f"Edit {args['file_path']}{every}",
        kind="edit",
        raw_input=args,
        content=(text(fenced_diff(old + new)),),
        locations=_file(args),
    )


def present_glob(args: Mapping[str, Any]) -> ToolCallPresentation:
    where = f" in {args['path']}" if args.get("path") else ""
    return ToolCallPresentation(title=f"Find {args['pattern']}{where}", kind="search", raw_input=args)


def present_grep(args: Mapping[str, Any]) -> ToolCallPresentation:
    where = f" in {args['path']}" if args.get("path") else ""
    include = f" ({args['include']})" if args.get("include") else ""
    return ToolCallPresentation(title=f"Search /{args['pattern']}/{where}{include}", kind="search", raw_input=args)


def present_change(args: Mapping[str, Any], result: ToolResult) -> ToolResultPresentation | None:
    """For a successful edit or write: a title counting the changed lines, the diff as content."""
    if result.is_error or len(result.content) != 1 or type(result.content[0]) is not TextBlock:
        return None
    body = result.content[0].text
    start = body.find("```diff\n")
    path = str(args["file_path"])
    if start < 0:
        content = args.get("content")
        if body.startswith("Created ") and isinstance(content, str):  # a new file: all of it is new
            return ToolResultPresentation(content=(text(body),), diffs=(ToolDiff(path, new_text=content),))
        return ToolResultPresentation(content=(text(body),))
    diff = body[start + len("```diff\n") : body.rfind("\n```")]
    added, removed = diff_stats(diff)
    return ToolResultPresentation(
        title=f"{path} (+{added} -{removed})", content=(text(fenced_diff(diff)),), diffs=hunk_diffs(diff, path)
    )
