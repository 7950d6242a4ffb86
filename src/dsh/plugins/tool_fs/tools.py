"""The model-facing file tools: ``read``, ``write``, ``edit``, ``glob`` and ``grep``.

Each call works in its session's workspace (``session.header.cwd``, else the fs
service's default root) through the ``fs`` service, so the workspace boundary and the
``fs/*`` gates apply to every tool. Every refusal is raised as a ``HarnessError`` whose
message tells the model what to do; the registry turns it into an error result, so a
bad call never fails the turn. ``read``, ``glob`` and ``grep`` only read and are
declared safe to run concurrently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NotRequired, Required, TypedDict

from dsh.core.errors import HarnessError
from dsh.core.fs import FileSystem, Workspace
from dsh.core.llm import ContentBlock, text
from dsh.core.tools import SchemaSpec, ToolDefinition, ToolExecution, define_tool
from dsh.plugins.tool_fs.ledger import ReadLedger, session_cwd, session_id, session_key
from dsh.plugins.tool_fs.present import (
    fenced_diff,
    present_change,
    present_edit,
    present_glob,
    present_grep,
    present_read,
    present_write,
    unified_diff,
)
from dsh.plugins.tool_fs.search import MAX_MATCHES, Match, ripgrep_args, run_ripgrep

PLUGIN_NAME = "tool-fs"

MAX_READ_LINES = 2000
"""The default and largest window of one ``read``."""

MAX_LINE_CHARS = 2000
"""Longer lines are cut in ``read`` results."""

MAX_GLOB_FILES = 100
"""The most paths one ``glob`` result lists."""

READ_DESCRIPTION = (
    "Read a UTF-8 text file of the workspace. Each line comes back as its number, a tab and its text "
    "(the number and tab are not part of the file: leave them out of edit's old_string).\n"
    "- Up to 2000 lines per call from `offset` (1-based, default 1); `limit` asks for fewer. A footer "
    "says which lines you got and the offset to continue with.\n"
    "- Lines longer than 2000 characters are cut.\n"
    "- Paths are relative to the workspace or absolute within it.\n"
    "- Read a file before you edit or overwrite it: edit and write refuse files you have not read in "
    "this session, or that changed since. Several reads may run at once.\n"
    "- Directories, binary and non-UTF-8 files are refused: find files with glob, inspect others with bash."
)

WRITE_DESCRIPTION = (
    "Create a text file with `content`, or replace all of an existing file's content.\n"
    "- Missing parent directories are created.\n"
    "- Overwriting an existing file requires that you read it in this session first; to change part "
    "of a file, prefer edit.\n"
    "- An existing file keeps its permissions and its line endings (a CRLF file stays CRLF)."
)

EDIT_DESCRIPTION = (
    "Replace exact text in a file: `old_string` becomes `new_string`.\n"
    "- Read the file in this session first; edit refuses a file you have not read or that changed since.\n"
    "- `old_string` must be copied exactly from the file (whitespace and indentation included, without "
    "the line-number prefix read shows) and must occur exactly once: include enough surrounding lines "
    "to make it unique, or set `replace_all: true` to change every occurrence.\n"
    "- An empty `new_string` deletes the text. The result shows the change as a unified diff.\n"
    "- To create a file, use write."
)

GLOB_DESCRIPTION = (
    "Find files by name pattern, e.g. `**/*.py` or `src/**/test_*.ts` (`**` spans directories, `*` stays "
    "within one; hidden files and directories are skipped).\n"
    f"- Returns file paths only (no directories), newest first, at most {MAX_GLOB_FILES}.\n"
    "- `path` is the directory to search in (default: the workspace)."
)

GREP_DESCRIPTION = (
    "Search file contents with a regular expression (ripgrep syntax: escape `(`, `[`, `{`, `.` and "
    "similar with a backslash to match them literally).\n"
    "- Searches the workspace, or `path` (a directory or one file), honoring .gitignore and skipping "
    "hidden and binary files.\n"
    "- `include` limits the files searched to a glob, e.g. `*.py` or `*.{ts,tsx}`.\n"
    f"- Returns matches grouped by file, each as `line: text`, at most {MAX_MATCHES}. Several searches "
    "may run at once."
)

READ_PARAMETERS: SchemaSpec = {
    "file_path": {"type": "string", "required": True, "description": "The file to read."},
    "offset": {"type": "number", "description": "The first line to return, 1-based (default 1)."},
    "limit": {"type": "number", "description": f"How many lines to return (default and maximum {MAX_READ_LINES})."},
}

WRITE_PARAMETERS: SchemaSpec = {
    "file_path": {"type": "string", "required": True, "description": "The file to create or overwrite."},
    "content": {"type": "string", "required": True, "description": "The file's complete new content."},
}

EDIT_PARAMETERS: SchemaSpec = {
    "file_path": {"type": "string", "required": True, "description": "The file to change."},
    "old_string": {"type": "string", "required": True, "description": "The exact text to replace."},
    "new_string": {"type": "string", "required": True, "description": "The text to put in its place."},
    "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false: exactly one)."},
}

GLOB_PARAMETERS: SchemaSpec = {
    "pattern": {"type": "string", "required": True, "description": "The glob to match, e.g. `**/*.py`."},
    "path": {"type": "string", "description": "The directory to search in (default: the workspace)."},
}

GREP_PARAMETERS: SchemaSpec = {
    "pattern": {"type": "string", "required": True, "description": "The regular expression to search for."},
    "path": {"type": "string", "description": "A directory or file to search (default: the workspace)."},
    "include": {"type": "string", "description": "Only search files matching this glob, e.g. `*.py`."},
}


class ReadArgs(TypedDict, total=False):
    file_path: Required[str]
    offset: float
    limit: float


class WriteArgs(TypedDict):
    file_path: str
    content: str


class EditArgs(TypedDict, total=False):
    file_path: Required[str]
    old_string: Required[str]
    new_string: Required[str]
    replace_all: NotRequired[bool]


class GlobArgs(TypedDict, total=False):
    pattern: Required[str]
    path: str


class GrepArgs(TypedDict, total=False):
    pattern: Required[str]
    path: str
    include: str


def _invalid(message: str) -> HarnessError:
    return HarnessError(message, "INVALID_ARGS")


def _whole_number(args: Mapping[str, Any], key: str, default: int) -> int:
    value = args.get(key, default)
    if not (float(value).is_integer() and value >= 1):
        raise _invalid(f"{key} must be a whole number of at least 1, got {value!r}")
    return int(value)


def _line_count(content: str) -> int:
    return content.count("\n") + (1 if content and not content.endswith("\n") else 0)


class FsTools:
    """The five tools of one plugin load, sharing its :class:`ReadLedger`."""

    def __init__(self, fs: FileSystem) -> None:
        self.fs = fs
        self.ledger = ReadLedger()

    def definitions(self) -> list[ToolDefinition]:
        return [
            define_tool(
                "read",
                READ_DESCRIPTION,
                READ_PARAMETERS,
                self.read,
                present_call=present_read,
                concurrency_safe=True,
                read_only=True,
            ),
            define_tool(
                "write",
                WRITE_DESCRIPTION,
                WRITE_PARAMETERS,
                self.write,
                present_call=present_write,
                present_result=present_change,
                fs_writes=True,
            ),
            define_tool(
                "edit",
                EDIT_DESCRIPTION,
                EDIT_PARAMETERS,
                self.edit,
                present_call=present_edit,
                present_result=present_change,
                fs_writes=True,
            ),
            define_tool(
                "glob",
                GLOB_DESCRIPTION,
                GLOB_PARAMETERS,
                self.glob,
                present_call=present_glob,
                concurrency_safe=True,
                read_only=True,
            ),
            define_tool(
                "grep",
                GREP_DESCRIPTION,
                GREP_PARAMETERS,
                self.grep,
                present_call=present_grep,
                concurrency_safe=True,
                read_only=True,
            ),
        ]

    def _workspace(self, execution: ToolExecution) -> Workspace:
        return self.fs.workspace(session_cwd(execution.agent), session_id=session_id(execution.agent))

    # ------------------------------------------------------------------- read
    async def read(self, args: ReadArgs, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        offset = _whole_number(args, "offset", 1)
        limit = min(_whole_number(args, "limit", MAX_READ_LINES), MAX_READ_LINES)
        workspace = self._workspace(execution)
        window = await self.fs.read_window(workspace, args["file_path"], offset, limit, MAX_LINE_CHARS)
        self.ledger.record(session_key(execution.agent), window.stat)
        shown = workspace.display(window.path)
        total = window.total_lines
        if total == 0:
            return (text(f"({shown} is empty)"),)
        if offset > total:
            raise _invalid(
                f"offset {offset} is past the end of {shown}, which has {total} lines: use an offset from 1 to {total}"
            )
        last = offset + len(window.lines) - 1
        body = "\n".join(f"{number:>6}\t{line}" for number, line in enumerate(window.lines, offset))
        notes: list[str] = []
        if window.cut_lines:
            numbers = ", ".join(str(number) for number in window.cut_lines)
            notes.append(
                f"[line {numbers}: longer than {MAX_LINE_CHARS} characters, cut; see the rest with bash "
                f"(e.g. `cut -c {MAX_LINE_CHARS + 1}-` on that line)]"
            )
        if last < total:
            notes.append(
                f"[lines {offset}-{last} of {total}; {total - last} more: call read with offset={last + 1} to continue]"
            )
        elif offset > 1:
            notes.append(f"[lines {offset}-{last} of {total}: end of file]")
        return (text("\n".join([body, *notes])),)

    # ------------------------------------------------------------------ write
    async def write(self, args: WriteArgs, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        workspace = self._workspace(execution)
        key = session_key(execution.agent)
        path = self.fs.resolve(workspace, args["file_path"], "write")
        shown = workspace.display(path)
        content = args["content"]
        async with self.ledger.lock(path):
            current = await self.fs.stat(workspace, path)
            if current is None:
                stat = await self.fs.write_text(workspace, path, content)
                self.ledger.record(key, stat)
                return (text(f"Created {shown} ({_line_count(content)} lines)."),)
            if current.kind == "directory":
                raise _invalid(f"{shown} is a directory: give the path of a file to write")
            self.ledger.check(key, current, shown, "write")
            old = await self.fs.read_text(workspace, path)
            new = content.replace("\r\n", "\n") if old.newline == "\r\n" else content
            stat = await self.fs.replace_text(workspace, path, new, expected=current.version, newline=old.newline)
            self.ledger.record(key, stat)
        diff = unified_diff(old.text, new, shown)
        summary = f"Overwrote {shown} ({_line_count(new)} lines)"
        return (text(f"{summary}:\n{fenced_diff(diff)}" if diff else f"{summary}; the content is unchanged."),)

    # ------------------------------------------------------------------- edit
    async def edit(self, args: EditArgs, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        old_string, new_string = args["old_string"], args["new_string"]
        if not old_string:
            raise _invalid(
                "old_string is empty: copy the exact text to replace from the file "
                "(to create a file or replace all of it, use write)"
            )
        if old_string == new_string:
            raise _invalid(
                "old_string and new_string are the same, so nothing would change: put the new text in new_string"
            )
        workspace = self._workspace(execution)
        key = session_key(execution.agent)
        path = self.fs.resolve(workspace, args["file_path"], "replace")
        shown = workspace.display(path)
        async with self.ledger.lock(path):
            current = await self.fs.stat(workspace, path)
            if current is None:
                raise HarnessError(
                    f"{shown} does not exist: check the path (glob finds files), or create it with write", "NOT_FOUND"
                )
            if current.kind == "directory":
                raise _invalid(f"{shown} is a directory: give the path of a file to edit")
            self.ledger.check(key, current, shown, "edit")
            file = await self.fs.read_text(workspace, path)
            if file.newline == "\r\n":
                old_string, new_string = old_string.replace("\r\n", "\n"), new_string.replace("\r\n", "\n")
            count = file.text.count(old_string)
            if count == 0:
                raise HarnessError(
                    f"old_string was not found in {shown}: copy it exactly from a fresh read (same whitespace and "
                    "indentation, without the line-number prefix)",
                    "NO_MATCH",
                )
            replace_all = args.get("replace_all") is True
            if count > 1 and not replace_all:
                raise HarnessError(
                    f"old_string occurs {count} times in {shown}: include more surrounding lines so that it "
                    "matches exactly once, or set replace_all: true to change every occurrence",
                    "AMBIGUOUS",
                )
            new_text = file.text.replace(old_string, new_string, -1 if replace_all else 1)
            stat = await self.fs.replace_text(workspace, path, new_text, expected=current.version, newline=file.newline)
            self.ledger.record(key, stat)
        replaced = f"{count} occurrences" if count > 1 else "1 occurrence"
        return (text(f"Edited {shown}: replaced {replaced}.\n{fenced_diff(unified_diff(file.text, new_text, shown))}"),)

    # ------------------------------------------------------------------- glob
    async def glob(self, args: GlobArgs, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        workspace = self._workspace(execution)
        pattern = args["pattern"]
        if not pattern.strip():
            raise _invalid("pattern is empty: give a glob such as '**/*.py'")
        path = args.get("path") or "."
        found = await self.fs.glob(workspace, pattern, path, MAX_GLOB_FILES)
        if not found.files:
            where = _place(workspace, self.fs.resolve(workspace, path, "glob"))
            return (text(f"No files match {pattern} in {where}."),)
        lines = [workspace.display(entry.path) for entry in found.files]
        if found.total > len(found.files):
            lines.append(f"[{len(found.files)} of {found.total} files shown, newest first: narrow the pattern or path]")
        return (text("\n".join(lines)),)

    # ------------------------------------------------------------------- grep
    async def grep(self, args: GrepArgs, execution: ToolExecution) -> tuple[ContentBlock, ...]:
        workspace = self._workspace(execution)
        pattern = args["pattern"]
        if not pattern:
            raise _invalid("pattern is empty: give a regular expression to search for")
        target = self.fs.resolve(workspace, args.get("path") or ".", "grep")
        if await self.fs.stat(workspace, target) is None:
            raise HarnessError(
                f"{workspace.display(target)} does not exist: give a directory or file of the workspace", "NOT_FOUND"
            )
        outcome = await run_ripgrep(
            ripgrep_args(pattern, workspace.display(target), args.get("include")), workspace.root, execution.signal
        )
        if outcome.exit_code not in (0, 1) and not outcome.matches:
            raise HarnessError(
                f"grep failed: {outcome.stderr or f'ripgrep exited with {outcome.exit_code}'}; check the pattern "
                "(ripgrep regex syntax: escape special characters with a backslash)",
                "SEARCH_FAILED",
            )
        if not outcome.matches:
            return (text(f"No matches for /{pattern}/ in {_place(workspace, target)}."),)
        return (text(_group(outcome.matches, outcome.truncated)),)


def _place(workspace: Workspace, path: str) -> str:
    shown = workspace.display(path)
    return "the workspace" if shown == "." else shown


def _group(matches: tuple[Match, ...], truncated: bool) -> str:
    shown = matches[:MAX_MATCHES]
    blocks: list[str] = []
    current: str | None = None
    files = 0
    for match in shown:
        if match.path != current:
            current = match.path
            files += 1
            blocks.append(("\n" if blocks else "") + match.path)
        blocks.append(f"{match.line}: {match.text}")
    more = truncated or len(matches) > len(shown)
    total = f"the first {len(shown)} matches" if more else f"{len(shown)} {'match' if len(shown) == 1 else 'matches'}"
    footer = f"[{total} in {files} {'file' if files == 1 else 'files'}"
    footer += "; narrow the pattern, path or include to see the rest]" if more else "]"
    return "\n".join([*blocks, footer])
