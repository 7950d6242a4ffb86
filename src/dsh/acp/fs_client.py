"""ACP ``fs/*`` passthrough: a session's file reads and writes go to the editor.

When the client advertises ``clientCapabilities.fs.readTextFile`` and/or
``writeTextFile``, every session it opens gets an :class:`AcpEditorFiles` attached to
the tree's ``fs`` service (:meth:`~dsh.core.fs.FileSystem.attach_editor`): the file
tools then read the editor's buffers (``fs/read_text_file``, unsaved changes
included) and apply edits in the editor (``fs/write_text_file``), while workspace
checks, the ``fs/*`` gates and read-before-edit stay the service's. The attachment is
an effect of the session's fiber, so it ends with the session.

A client error answering ``fs/*`` fails that tool call with ``IO_ERROR`` naming the
client's message (the model sees a tool error, the turn goes on).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from acp.exceptions import RequestError
from acp.schema import FileSystemCapabilities, ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest
from acp.utils import serialize_params
from pydantic import BaseModel, ValidationError

from dsh.core.fs import FsError

Request = Callable[[str, Any], Awaitable[Any]]
"""Sends one request to the client and returns its result (``RpcServer.request``)."""


class FsCapabilities:
    """What the client said it can do with files (``clientCapabilities.fs``)."""

    def __init__(self, fs: FileSystemCapabilities | None = None) -> None:
        self.reads = fs is not None and fs.read_text_file is True
        self.writes = fs is not None and fs.write_text_file is True

    @property
    def any(self) -> bool:
        return self.reads or self.writes


class AcpEditorFiles:
    """One session's editor over the connection (an :class:`~dsh.core.fs.EditorFiles`)."""

    def __init__(self, request: Request, session_id: str, capabilities: FsCapabilities) -> None:
        self._request = request
        self._session_id = session_id
        self._reads = capabilities.reads
        self._writes = capabilities.writes

    @property
    def reads(self) -> bool:
        return self._reads

    @property
    def writes(self) -> bool:
        return self._writes

    async def read(self, path: str) -> str:
        result = await self._call(
            "fs/read_text_file", ReadTextFileRequest(session_id=self._session_id, path=path), path
        )
        try:
            return ReadTextFileResponse.model_validate(result).content
        except ValidationError as error:
            raise FsError(
                f"the editor's answer to fs/read_text_file for {path} has no text content", "IO_ERROR", path
            ) from error

    async def write(self, path: str, text: str) -> None:
        request = WriteTextFileRequest(session_id=self._session_id, path=path, content=text)
        await self._call("fs/write_text_file", request, path)

    async def _call(self, method: str, params: BaseModel, path: str) -> Any:
        try:
            return await self._request(method, serialize_params(params))
        except RequestError as error:
            raise FsError(f"the editor refused {method} for {path}: {error}", "IO_ERROR", path) from error
        except ConnectionError as error:
            raise FsError(
                f"the editor is gone ({error}): {method} for {path} was not done", "IO_ERROR", path
            ) from error
