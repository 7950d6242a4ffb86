"""The ``fs/*`` event catalog: the gates and notices of every filesystem operation."""

from __future__ import annotations

from collections.abc import Awaitable

from dsh.core.fs.types import FileStat, FsAccessRequest, FsObservation, FsWriteIntent
from dsh.kernel import EmitEvent, WaterfallEvent

FS_ACCESS: WaterfallEvent[[FsAccessRequest], bool] = WaterfallEvent(
    "fs/access",
    doc=(
        "Waterfall asked when a path lies outside the workspace and its extra directories: listeners "
        "get (request, next) and return True to allow it, False (or next(), which ends in False) to "
        "refuse. Synchronous; a raise reaches the caller."
    ),
)
"""See ``doc``: ``(request, next) -> bool``."""

FS_WRITE_INTENT: WaterfallEvent[[FsWriteIntent], Awaitable[FileStat]] = WaterfallEvent(
    "fs/write-intent",
    doc=(
        "Waterfall around every write and replace: listeners get (intent, next) and return an awaitable "
        "of the new file's stat. Veto by raising FsError (code DENIED, a message saying why) without "
        "calling next(); observe or wrap by awaiting next()."
    ),
)
"""See ``doc``: ``(intent, next) -> Awaitable[FileStat]``."""

FS_OBSERVED: EmitEvent[[FsObservation]] = EmitEvent(
    "fs/observed",
    doc="Emitted after a file was read or written, with its new stat. A raise reaches the caller.",
)
"""See ``doc``: emitted with the observation after each read and write."""
