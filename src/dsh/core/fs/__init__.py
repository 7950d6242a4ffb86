"""The filesystem seam: a ``fs`` service bound to each session's workspace, the file
vocabulary, and the ``fs/*`` events a policy plugin gates."""

from dsh.core.fs.editor import EditorFiles, content_version
from dsh.core.fs.events import FS_ACCESS, FS_OBSERVED, FS_WRITE_INTENT
from dsh.core.fs.service import FS, FileSystem, is_within
from dsh.core.fs.types import (
    FileKind,
    FileStat,
    FsAccessRequest,
    FsError,
    FsErrorCode,
    FsObservation,
    FsWriteIntent,
    GlobResult,
    Newline,
    PathCheck,
    TextFile,
    TextWindow,
    Workspace,
)

__all__ = [
    "FS",
    "FS_ACCESS",
    "FS_OBSERVED",
    "FS_WRITE_INTENT",
    "EditorFiles",
    "FileKind",
    "FileStat",
    "FileSystem",
    "FsAccessRequest",
    "FsError",
    "FsErrorCode",
    "FsObservation",
    "FsWriteIntent",
    "GlobResult",
    "Newline",
    "PathCheck",
    "TextFile",
    "TextWindow",
    "Workspace",
    "content_version",
    "is_within",
]
