"""A scripted agent turn through the real loop: read a file, edit it, grep for the change."""

from __future__ import annotations

from pathlib import Path

import dsh.plugins.tool_fs as tool_fs
from dsh.core.llm import text
from dsh.plugins.fs_local import LocalFileSystem
from dsh.testing.harness import Harness
from dsh.testing.logs import data_json
from dsh.testing.scripted import text_response, tool_call_response


async def test_the_model_reads_edits_and_greps_in_one_turn(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    script = [
        tool_call_response("c1", "read", {"file_path": "calc.py"}),
        tool_call_response("c2", "edit", {"file_path": "calc.py", "old_string": "a - b", "new_string": "a + b"}),
        tool_call_response("c3", "grep", {"pattern": r"return a \+ b"}),
        tool_call_response("c4", "edit", {"file_path": "calc.py", "old_string": "missing", "new_string": "x"}),
        text_response("fixed add"),
    ]
    async with Harness(script) as h:
        await h.ctx.plugin(LocalFileSystem, {"root": str(tmp_path)})
        await h.ctx.plugin(tool_fs)
        agent = h.agent()
        agent.send([text("fix add")])
        await agent.when_idle()
        results = data_json(agent.session, "tool/result")
        assert [r["callId"] for r in results] == ["c1", "c2", "c3", "c4"]
        assert [r["isError"] for r in results] == [False, False, False, True]
        assert results[0]["content"][0]["text"] == "     1\tdef add(a, b):\n     2\t    return a - b"
        assert "-    return a - b\n+    return a + b" in results[1]["content"][0]["text"]
        assert results[2]["content"][0]["text"] == "calc.py\n2:     return a + b\n[1 match in 1 file]"
        assert results[3]["content"][0]["text"].startswith("Error: old_string was not found in calc.py")
        assert data_json(agent.session, "turn/end")[-1]["reason"]["kind"] == "completed"
        h.model.assert_consumed()
    assert (tmp_path / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
