"""The display of file tool calls and results (pure)."""

from __future__ import annotations

from dsh.core.llm import ImageBlock, text
from dsh.core.tools import TOOLS, ToolCallPresentation, ToolDiff, ToolLocation, ToolResult, ToolResultPresentation
from dsh.plugins.tool_fs import diff_stats, present_change, unified_diff
from dsh.plugins.tool_fs.present import MAX_DIFF_LINES, hunk_diffs, present_edit, present_read, present_write
from tests.plugins.tool_fs.conftest import Stack


async def test_call_cards_carry_kind_and_title(stack: Stack) -> None:
    registry = stack.root[TOOLS]

    def card(name: str, args: dict[str, object]) -> ToolCallPresentation | None:
        definition = registry.get(name)
        assert definition is not None
        assert definition.present_call is not None
        return definition.present_call(args)

    read = card("read", {"file_path": "a.py"})
    assert read is not None
    assert (read.title, read.kind) == ("Read a.py", "read")
    assert card("read", {"file_path": "a.py", "offset": 3}).title == "Read a.py (from line 3)"  # type: ignore[union-attr]
    assert card("read", {"file_path": "a.py", "limit": 5}).title == "Read a.py (lines 1-5)"  # type: ignore[union-attr]
    write = card("write", {"file_path": "a.py", "content": "x"})
    assert write is not None
    assert (write.title, write.kind) == ("Write a.py", "edit")
    edit = card("edit", {"file_path": "a.py", "old_string": "a\nb", "new_string": "c", "replace_all": True})
    assert edit is not None
    assert (edit.title, edit.kind) == ("Edit a.py (every occurrence)", "edit")
    assert edit.content == (text("```diff\n-a\n-b\n+c\n```"),)
    assert card("glob", {"pattern": "*.py", "path": "src"}).title == "Find *.py in src"  # type: ignore[union-attr]
    assert card("glob", {"pattern": "*.py"}).kind == "search"  # type: ignore[union-attr]
    grep = card("grep", {"pattern": "x+", "path": "src", "include": "*.py"})
    assert grep is not None
    assert (grep.title, grep.kind) == ("Search /x+/ in src (*.py)", "search")
    assert card("grep", {"pattern": "x"}).title == "Search /x/"  # type: ignore[union-attr]
    assert card("read", {}) is None  # invalid arguments: presented generically


def test_change_results_show_the_diff_with_counts() -> None:
    args = {"file_path": "a.py"}
    body = "Edited a.py: replaced 1 occurrence.\n```diff\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n```"
    presented = present_change(args, ToolResult(content=(text(body),), is_error=False))
    assert presented == ToolResultPresentation(
        title="a.py (+1 -1)",
        content=(text("```diff\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y\n```"),),
        diffs=(ToolDiff("a.py", old_text="x\n", new_text="y\n"),),
    )
    plain = present_change(args, ToolResult(content=(text("Created a.py (1 lines)."),), is_error=False))
    assert plain == ToolResultPresentation(content=(text("Created a.py (1 lines)."),))
    assert present_change(args, ToolResult(content=(text("Error: no"),), is_error=True)) is None
    image = ImageBlock(url="data:image/png;base64,AA==")
    assert present_change(args, ToolResult(content=(image,), is_error=False)) is None


def test_unified_diff_is_capped() -> None:
    old = "".join(f"{n}\n" for n in range(1000))
    new = "".join(f"{n}!\n" for n in range(1000))
    diff = unified_diff(old, new, "f")
    assert diff.splitlines()[-1] == f"[… {2003 - MAX_DIFF_LINES} more diff lines]"
    assert unified_diff("same", "same", "f") == ""
    assert diff_stats("--- a/f\n+++ b/f\n+x\n-y\n-z\n context\n") == (1, 2)


def test_a_diff_deep_in_a_long_file_numbers_its_hunks_from_the_top_of_the_file() -> None:
    old = "".join(f"line {n}\n" for n in range(1, 1001))
    new = old.replace("line 500\n", "changed 500\n").replace("line 900\n", "")
    assert unified_diff(old, new, "f") == (
        "--- a/f\n+++ b/f\n"
        "@@ -497,7 +497,7 @@\n line 497\n line 498\n line 499\n-line 500\n+changed 500\n line 501\n line 502\n line 503\n"
        "@@ -897,7 +897,6 @@\n line 897\n line 898\n line 899\n-line 900\n line 901\n line 902\n line 903\n"
    )


def test_a_change_at_the_very_start_or_end_keeps_what_context_there_is() -> None:
    old = "a\nb\nc\nd\ne\n"
    assert unified_diff(old, "A\nb\nc\nd\ne\n", "f") == "--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n-a\n+A\n b\n c\n d\n"
    assert unified_diff(old, "a\nb\nc\nd\nE", "f") == (
        "--- a/f\n+++ b/f\n@@ -2,4 +2,4 @@\n b\n c\n d\n-e\n+E\n\\ No newline at end of file\n"
    )


def test_call_cards_name_the_file_as_a_location() -> None:
    assert present_read({"file_path": "a.py"}).locations == (ToolLocation("a.py"),)
    assert present_read({"file_path": "a.py", "offset": 7}).locations == (ToolLocation("a.py", 7),)
    assert present_write({"file_path": "/w/a.py", "content": ""}).locations == (ToolLocation("/w/a.py"),)
    edit = present_edit({"file_path": "a.py", "old_string": "x", "new_string": "y"})
    assert edit.locations == (ToolLocation("a.py"),)


def test_change_results_carry_the_change_as_diffs() -> None:
    def shown(body: str, args: dict[str, object]) -> ToolResultPresentation | None:
        return present_change(args, ToolResult(content=(text(body),), is_error=False))

    created = shown("Created a.py (1 lines).", {"file_path": "a.py", "content": "x\n"})
    assert created is not None
    assert created.diffs == (ToolDiff("a.py", new_text="x\n"),)
    same = shown("Wrote a.py; the content is unchanged.", {"file_path": "a.py", "content": "x\n"})
    assert same is not None
    assert same.diffs is None
    diff = "--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n k\n-x\n\\ No newline at end of file\n+y\n"
    edited = shown(f"Edited a.py: replaced 1 occurrence.\n```diff\n{diff}```", {"file_path": "a.py"})
    assert edited is not None
    assert edited.diffs == (ToolDiff("a.py", old_text="k\nx", new_text="k\ny\n"),)
    capped = "@@ -1 +1 @@\n-a\n+b\n@@ -9 +9 @@\n-c\n[… 3 more diff lines]\n"
    assert hunk_diffs(capped, "f") == (ToolDiff("f", "b\n", "a\n"), ToolDiff("f", "", "c\n"))
    assert hunk_diffs("", "f") == ()
