"""read, write and edit through the registry against real files."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from dsh.core.tools import TOOLS
from dsh.plugins.tool_fs import MAX_READ_LINES
from tests.plugins.tool_fs.conftest import FakeAgent, Stack


# --------------------------------------------------------------------------- schemas
async def test_the_tools_their_argument_names_and_concurrency(stack: Stack) -> None:
    registry = stack.root[TOOLS]
    expected = {
        "read": ({"file_path", "offset", "limit"}, ["file_path"], True),
        "write": ({"file_path", "content"}, ["file_path", "content"], False),
        "edit": (
            {"file_path", "old_string", "new_string", "replace_all"},
            ["file_path", "old_string", "new_string"],
            False,
        ),
        "glob": ({"pattern", "path"}, ["pattern"], True),
        "grep": ({"pattern", "path", "include"}, ["pattern"], True),
    }
    for name, (properties, required, safe) in expected.items():
        definition = registry.get(name)
        assert definition is not None
        assert set(definition.parameters["properties"]) == properties
        assert definition.parameters["required"] == required
        assert definition.concurrency_safe is safe
        assert len(definition.description) > 100


# ------------------------------------------------------------------------------ read
async def test_read_numbers_lines_and_says_how_to_read_on(stack: Stack) -> None:
    (stack.ws / "big.txt").write_text("".join(f"line {n}\n" for n in range(1, 2501)))
    first = await stack.text("read", {"file_path": "big.txt"})
    lines = first.split("\n")
    assert lines[0] == "     1\tline 1"
    assert lines[MAX_READ_LINES - 1] == "  2000\tline 2000"
    assert lines[-1] == "[lines 1-2000 of 2500; 500 more: call read with offset=2001 to continue]"
    rest = await stack.text("read", {"file_path": "big.txt", "offset": 2001, "limit": 5000})
    assert rest.split("\n")[0] == "  2001\tline 2001"
    assert rest.endswith("  2500\tline 2500\n[lines 2001-2500 of 2500: end of file]")
    whole = await stack.text("read", {"file_path": "big.txt", "offset": 2.0, "limit": 2})
    assert (
        whole == "     2\tline 2\n     3\tline 3\n[lines 2-3 of 2500; 2497 more: call read with offset=4 to continue]"
    )


async def test_read_small_empty_and_long_line_files(stack: Stack) -> None:
    (stack.ws / "s.txt").write_text("a\nb")
    assert await stack.text("read", {"file_path": str(stack.ws / "s.txt")}) == "     1\ta\n     2\tb"
    (stack.ws / "e.txt").write_text("")
    assert await stack.text("read", {"file_path": "e.txt"}) == "(e.txt is empty)"
    (stack.ws / "l.txt").write_text("x" * 2500 + "\n")
    text = await stack.text("read", {"file_path": "l.txt"})
    assert text.startswith("     1\t" + "x" * 2000 + "\n[line 1: longer than 2000 characters, cut;")


async def test_read_bad_input_is_a_tool_error_telling_what_to_do(stack: Stack, tmp_path: Path) -> None:
    (stack.ws / "s.txt").write_text("a\n")
    (stack.ws / "dir").mkdir()
    assert "offset 5 is past the end of s.txt, which has 1 lines: use an offset from 1 to 1" in await stack.error(
        "read", {"file_path": "s.txt", "offset": 5}
    )
    assert "offset must be a whole number of at least 1, got 0" in await stack.error(
        "read", {"file_path": "s.txt", "offset": 0}
    )
    assert "limit must be a whole number" in await stack.error("read", {"file_path": "s.txt", "limit": 1.5})
    assert "invalid arguments" in await stack.error("read", {})
    assert "is a directory, not a file" in await stack.error("read", {"file_path": "dir"})
    assert "is outside the workspace" in await stack.error("read", {"file_path": str(tmp_path / "x.txt")})
    assert "does not exist" in await stack.error("read", {"file_path": "missing.txt"})
    (stack.ws / "img.gif").write_bytes(b"GIF89a\x00\x00")
    assert "binary file (GIF image, 8 bytes)" in await stack.error("read", {"file_path": "img.gif"})


# ----------------------------------------------------------------------------- write
async def test_write_creates_without_a_read_but_overwrites_only_after_one(stack: Stack) -> None:
    assert (
        await stack.text("write", {"file_path": "pkg/new.py", "content": "a = 1\nb = 2"})
        == "Created pkg/new.py (2 lines)."
    )
    assert (stack.ws / "pkg" / "new.py").read_text() == "a = 1\nb = 2"
    # its own write counts as seen
    text = await stack.text("write", {"file_path": "pkg/new.py", "content": "a = 1\nb = 3\n"})
    assert text.startswith("Overwrote pkg/new.py (2 lines):\n```diff\n--- a/pkg/new.py\n+++ b/pkg/new.py\n")
    assert "-b = 2\n\\ No newline at end of file\n+b = 3\n" in text
    (stack.ws / "old.txt").write_text("keep\n")
    error = await stack.error("write", {"file_path": "old.txt", "content": "x"})
    assert error == (
        "Error: old.txt has not been read in this session: call read on it first, then write it "
        "(existing files are changed only after you have seen them)"
    )
    await stack.text("read", {"file_path": "old.txt"})
    assert await stack.text("write", {"file_path": "old.txt", "content": "keep\n"}) == (
        "Overwrote old.txt (1 lines); the content is unchanged."
    )


async def test_write_keeps_crlf_and_refuses_directories(stack: Stack) -> None:
    (stack.ws / "dos.txt").write_bytes(b"a\r\nb\r\n")
    await stack.text("read", {"file_path": "dos.txt"})
    await stack.text("write", {"file_path": "dos.txt", "content": "a\nc\n"})
    assert (stack.ws / "dos.txt").read_bytes() == b"a\r\nc\r\n"
    (stack.ws / "d").mkdir()
    assert "d is a directory: give the path of a file to write" in await stack.error(
        "write", {"file_path": "d", "content": ""}
    )


# ------------------------------------------------------------------------------ edit
async def test_edit_after_read_replaces_once_and_shows_a_diff(stack: Stack) -> None:
    source = stack.ws / "app.py"
    source.write_text("def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    await stack.text("read", {"file_path": "app.py", "limit": 1})  # any window counts
    text = await stack.text("edit", {"file_path": "app.py", "old_string": "return 2", "new_string": "return 3"})
    assert text.startswith(
        "Edited app.py: replaced 1 occurrence.\n```diff\n--- a/app.py\n+++ b/app.py\n@@ -3,4 +3,4 @@"
    )
    assert "-    return 2\n+    return 3\n```" in text
    assert source.read_text().endswith("return 3\n")
    # its own edit counts as seen: a second edit goes through without another read
    await stack.text("edit", {"file_path": "app.py", "old_string": "return 1", "new_string": "return 0"})
    assert "return 0" in source.read_text()


async def test_edit_replace_all_and_the_match_errors(stack: Stack) -> None:
    (stack.ws / "m.txt").write_text("x = 1\nx = 1\n")
    await stack.text("read", {"file_path": "m.txt"})
    edit = {"file_path": "m.txt", "old_string": "x = 1", "new_string": "x = 2"}
    assert await stack.error("edit", edit) == (
        "Error: old_string occurs 2 times in m.txt: include more surrounding lines so that it matches exactly "
        "once, or set replace_all: true to change every occurrence"
    )
    assert "replaced 2 occurrences" in await stack.text("edit", {**edit, "replace_all": True})
    assert (stack.ws / "m.txt").read_text() == "x = 2\nx = 2\n"
    assert "old_string was not found in m.txt: copy it exactly" in await stack.error("edit", edit)
    assert "old_string is empty" in await stack.error("edit", {**edit, "old_string": ""})
    assert "are the same" in await stack.error("edit", {**edit, "new_string": "x = 1"})
    assert "invalid arguments" in await stack.error("edit", {"file_path": "m.txt", "old_string": "x"})
    assert "missing.txt does not exist" in await stack.error("edit", {**edit, "file_path": "missing.txt"})
    (stack.ws / "d").mkdir()
    assert "d is a directory" in await stack.error("edit", {**edit, "file_path": "d"})


async def test_edit_keeps_crlf_and_accepts_crlf_in_old_string(stack: Stack) -> None:
    (stack.ws / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await stack.text("read", {"file_path": "w.txt"})
    await stack.text("edit", {"file_path": "w.txt", "old_string": "one\r\ntwo", "new_string": "1\n2"})
    assert (stack.ws / "w.txt").read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_a_file_changed_behind_the_agent_s_back_must_be_read_again(stack: Stack) -> None:
    target = stack.ws / "c.txt"
    target.write_text("alpha\n")
    await stack.text("read", {"file_path": "c.txt"})
    target.write_text("alpha beta\n")  # another program changes it
    error = await stack.error("edit", {"file_path": "c.txt", "old_string": "alpha", "new_string": "gamma"})
    assert error == (
        "Error: c.txt changed on disk since you last read it: read it again, then redo the edit against its "
        "current content"
    )
    assert "changed on disk" in await stack.error("write", {"file_path": "c.txt", "content": "x"})
    assert target.read_text() == "alpha beta\n"
    await stack.text("read", {"file_path": "c.txt"})
    await stack.text("edit", {"file_path": "c.txt", "old_string": "beta", "new_string": "gamma"})
    assert target.read_text() == "alpha gamma\n"


async def test_concurrent_edits_of_one_file(stack: Stack) -> None:
    """One session's concurrent edits run one after the other and both apply; another session
    that read the file before the change is refused until it reads again."""
    target = stack.ws / "conf.ini"
    target.write_text("a = 1\nb = 1\n")
    other = FakeAgent("s2", cwd=str(stack.ws))
    await stack.text("read", {"file_path": "conf.ini"})
    await stack.text("read", {"file_path": "conf.ini"}, other)
    first, second = await asyncio.gather(
        stack.call("edit", {"file_path": "conf.ini", "old_string": "a = 1", "new_string": "a = 2"}),
        stack.call("edit", {"file_path": "conf.ini", "old_string": "b = 1", "new_string": "b = 2"}),
    )
    assert first.is_error is False
    assert second.is_error is False
    assert target.read_text() == "a = 2\nb = 2\n"
    refused = await stack.error("edit", {"file_path": "conf.ini", "old_string": "a = 2", "new_string": "a = 3"}, other)
    assert "changed on disk since you last read it" in refused
    assert target.read_text() == "a = 2\nb = 2\n"


async def test_sessions_work_in_their_own_cwd_and_unread_is_per_session(stack: Stack, tmp_path: Path) -> None:
    elsewhere = tmp_path / "other-ws"
    elsewhere.mkdir()
    (elsewhere / "f.txt").write_text("mine\n")
    agent = FakeAgent("s3", cwd=str(elsewhere))
    assert await stack.text("read", {"file_path": "f.txt"}, agent) == "     1\tmine"
    assert "outside the workspace" in await stack.error("read", {"file_path": str(elsewhere / "f.txt")})
    assert os.path.exists(stack.ws)


def test_whose_record_a_call_uses() -> None:
    from dsh.plugins.tool_fs import session_cwd, session_key

    loose = object()
    assert session_key(None) == ""
    assert session_key(loose) == f"agent-{id(loose)}"
    assert session_key(FakeAgent("abc")) == "abc"
    assert session_cwd(FakeAgent("abc")) is None
