"""ACP fs passthrough in process: the file tools of a session whose client advertises ``fs`` go to the client."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from acp.schema import FileSystemCapabilities

import dsh.plugins.tool_fs as tool_fs
from dsh.acp import RequestError
from dsh.acp.fs_client import AcpEditorFiles, FsCapabilities
from dsh.core.fs import FsError
from dsh.plugins.fs_local import LocalFileSystem
from dsh.testing.scripted import text_response, tool_call_response
from tests.acp.client import AcpTestClient, result_of
from tests.acp.helpers import bridge_stack


class Editor:
    """Answers the server's ``fs/*`` requests from buffers; ``refuse`` makes reads fail, ``blank`` empty."""

    def __init__(self, client: AcpTestClient, buffers: dict[str, str]) -> None:
        self.client = client
        self.buffers = buffers
        self.requests: list[dict[str, Any]] = []
        self.refuse = False
        self.blank = False
        self._task = asyncio.ensure_future(self._serve())

    async def _serve(self) -> None:
        answered = 0
        while True:
            await self.client.wait_for(lambda c, seen=answered: len(self._asked(c)) > seen)
            frame = self._asked(self.client)[answered]
            answered += 1
            self.requests.append(frame)
            params = frame["params"]
            if frame["method"] == "fs/read_text_file":
                if self.refuse:
                    body: dict[str, Any] = {"error": {"code": -32000, "message": "buffer locked"}}
                elif self.blank:
                    body = {"result": {}}
                else:
                    body = {"result": {"content": self.buffers[params["path"]]}}
            else:
                self.buffers[params["path"]] = params["content"]
                body = {"result": None}
            self.client.write_raw(json.dumps({"jsonrpc": "2.0", "id": frame["id"], **body}))

    @staticmethod
    def _asked(client: AcpTestClient) -> list[dict[str, Any]]:
        return [f for f in client.frames if "method" in f and "id" in f]

    def close(self) -> None:
        self._task.cancel()


async def test_a_session_of_an_fs_client_reads_buffers_and_writes_through_the_client(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    target = workspace / "notes.txt"
    target.write_text("disk text\n")
    script = [
        tool_call_response("r1", "read", {"file_path": "notes.txt"}),
        tool_call_response("e1", "edit", {"file_path": "notes.txt", "old_string": "buffer", "new_string": "BUFFER"}),
        tool_call_response("r2", "read", {"file_path": "notes.txt"}),
        text_response("ok"),
    ]
    async with bridge_stack(tmp_path, script) as stack:
        await stack.ctx.plugin(LocalFileSystem, {})
        await stack.ctx.plugin(tool_fs)
        editor = Editor(stack.client, {str(target): "buffer text\n"})
        fs = {"readTextFile": True, "writeTextFile": True}
        await stack.client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {"fs": fs}})
        session_id = await stack.client.new_session(str(workspace))
        assert result_of(await stack.client.prompt_future(session_id, "edit")) == {"stopReason": "end_turn"}
        methods = [(r["method"], r["params"]["sessionId"]) for r in editor.requests]
        assert ("fs/write_text_file", session_id) in methods
        assert editor.buffers[str(target)] == "BUFFER text\n"
        assert target.read_text() == "disk text\n"
        update = next(
            u for u in stack.updates if u.get("toolCallId") == "e1" and u["sessionUpdate"] == "tool_call_update"
        )
        assert update["content"] == [
            {"type": "diff", "path": str(target), "oldText": "buffer text\n", "newText": "BUFFER text\n"}
        ]
        # the client fails a read: a tool error naming it, the turn goes on
        editor.refuse = True
        stack.harness.model.push(tool_call_response("r3", "read", {"file_path": "notes.txt"}), text_response("ok"))
        await stack.client.prompt(session_id, "again")
        failed = next(
            u for u in stack.updates if u.get("toolCallId") == "r3" and u["sessionUpdate"] == "tool_call_update"
        )
        assert failed["status"] == "failed"
        assert "the editor refused fs/read_text_file" in json.dumps(failed)
        assert "buffer locked" in json.dumps(failed)
        editor.refuse, editor.blank = False, True
        stack.harness.model.push(tool_call_response("r4", "read", {"file_path": "notes.txt"}), text_response("ok"))
        await stack.client.prompt(session_id, "once more")
        blank = next(
            u for u in stack.updates if u.get("toolCallId") == "r4" and u["sessionUpdate"] == "tool_call_update"
        )
        assert "has no text content" in json.dumps(blank)
        editor.close()


async def test_without_fs_capabilities_the_disk_is_used(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("from disk\n")
    script = [tool_call_response("r1", "read", {"file_path": "a.txt"}), text_response("ok")]
    async with bridge_stack(tmp_path, script) as stack:
        await stack.ctx.plugin(LocalFileSystem, {})
        await stack.ctx.plugin(tool_fs)
        await stack.client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {"fs": {}}})
        session_id = await stack.client.new_session(str(workspace))
        await stack.client.prompt(session_id, "read")
        assert "from disk" in json.dumps(stack.updates)
        assert not [f for f in stack.client.frames if f.get("method", "").startswith("fs/")]


async def test_a_closed_connection_is_an_io_error_naming_the_call() -> None:
    async def gone(method: str, params: Any) -> Any:
        raise ConnectionError("the client closed the connection")

    async def refused(method: str, params: Any) -> Any:
        raise RequestError(-32000, "nope")

    files = AcpEditorFiles(gone, "s", FsCapabilities(FileSystemCapabilities(read_text_file=True)))
    assert files.reads
    assert not files.writes
    with pytest.raises(FsError) as caught:
        await files.write("/w/a", "x")
    assert caught.value.code == "IO_ERROR"
    assert str(caught.value).startswith("the editor is gone (the client closed the connection): fs/write_text_file")
    with pytest.raises(FsError, match="the editor refused fs/read_text_file for /w/a: nope"):
        await AcpEditorFiles(refused, "s", FsCapabilities()).read("/w/a")
    assert not FsCapabilities(None).any
