"""``fs-local``: the filesystem service over local files (atomic text writes, binary refused).

Load ``dsh.plugins.fs_local:LocalFileSystem``; config ``{root?, extraDirs?}``.
"""

from dsh.plugins.fs_local.backend import LocalFileSystem, LocalFsConfig, to_stat
from dsh.plugins.fs_local.text import binary_kind, decode_text, detect_newline, read_lines

__all__ = [
    "LocalFileSystem",
    "LocalFsConfig",
    "binary_kind",
    "decode_text",
    "detect_newline",
    "read_lines",
    "to_stat",
]
