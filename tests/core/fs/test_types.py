"""The fs vocabulary: workspaces, errors and the boundary rule."""

from __future__ import annotations

from dsh.core.errors import HarnessError
from dsh.core.fs import FS, FS_ACCESS, FS_OBSERVED, FS_WRITE_INTENT, FsError, Workspace, is_within
from dsh.core.llm import encode


def test_is_within_compares_whole_path_components() -> None:
    assert is_within("/ws", ["/ws"])
    assert is_within("/ws/a/b", ["/other", "/ws"])
    assert not is_within("/ws2/a", ["/ws"])
    assert is_within("/anything", ["/"])


def test_a_workspace_encodes_camel_case_and_lists_its_roots() -> None:
    workspace = Workspace(root="/ws", extra_dirs=("/data",))
    assert workspace.roots == ("/ws", "/data")
    assert encode(workspace) == b'{"root":"/ws","extraDirs":["/data"]}'


def test_fs_errors_are_harness_errors_with_a_path() -> None:
    error = FsError("gone: check the path", "NOT_FOUND", "/ws/a")
    assert isinstance(error, HarnessError)
    assert (error.code, error.path, str(error)) == ("NOT_FOUND", "/ws/a", "gone: check the path")


def test_the_service_key_and_event_names() -> None:
    assert FS.name == "fs"
    assert [event.name for event in (FS_ACCESS, FS_WRITE_INTENT, FS_OBSERVED)] == [
        "fs/access",
        "fs/write-intent",
        "fs/observed",
    ]
    assert all(event.doc for event in (FS_ACCESS, FS_WRITE_INTENT, FS_OBSERVED))
