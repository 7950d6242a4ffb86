"""Finding and reading a workspace's instruction files (``AGENTS.md``, else ``CLAUDE.md``).

The chain runs from the project root (the nearest directory, walking up from the
workspace, that holds a root marker such as ``.git``; the workspace itself when
none does) down to the workspace. In each directory the first candidate that is a
regular file (a symlink to one counts) is the directory's instructions; later
candidates in the same directory are not read. A file is read only when its size
and modification time differ from the last read, so an unchanged chain costs a
few ``stat`` calls per model request and an edited file is picked up at the next one.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Instructions:
    """One loaded file: its path relative to the project root, its text, and whether it was cut."""

    path: str
    text: str
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class _Read:
    stamp: tuple[int, int]
    text: str | None  # None: unreadable or too large


def project_chain(workspace: str, markers: Sequence[str]) -> tuple[str, list[str]]:
    """``(root, directories from the root down to workspace)`` for an absolute ``workspace``."""
    here = os.path.abspath(workspace)
    chain = [here]
    probe = here
    while True:
        if any(os.path.lexists(os.path.join(probe, marker)) for marker in markers):
            return probe, chain
        parent = os.path.dirname(probe)
        if parent == probe:
            return here, [here]
        probe = parent
        chain.insert(0, probe)


class InstructionReader:
    """Reads instruction files with a per-path cache keyed by ``(size, mtime_ns)``."""

    __slots__ = ("_cache", "candidates", "markers", "max_file_bytes")

    def __init__(self, candidates: Sequence[str], markers: Sequence[str], max_file_bytes: int) -> None:
        self.candidates = tuple(name for name in candidates if name and "/" not in name and name not in (".", ".."))
        self.markers = tuple(markers)
        self.max_file_bytes = max_file_bytes
        self._cache: dict[str, _Read] = {}

    def chain(self, workspace: str) -> list[Instructions]:
        """The instructions that apply in ``workspace``, broadest first."""
        root, directories = project_chain(workspace, self.markers)
        found: list[Instructions] = []
        for directory in directories:
            loaded = self._directory(directory, root)
            if loaded is not None:
                found.append(loaded)
        return found

    def _directory(self, directory: str, root: str) -> Instructions | None:
        for name in self.candidates:
            path = os.path.join(directory, name)
            try:
                info = os.stat(path)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            text = self._read(path, info)
            if text is None:
                return None  # the directory's winner is unusable: no fallback to the next name
            return Instructions(os.path.relpath(path, root), text)
        return None

    def _read(self, path: str, info: os.stat_result) -> str | None:
        stamp = (info.st_size, info.st_mtime_ns)
        cached = self._cache.get(path)
        if cached is not None and cached.stamp == stamp:
            return cached.text
        text: str | None = None
        if info.st_size <= self.max_file_bytes:
            try:
                with open(path, "rb") as file:
                    data = file.read(self.max_file_bytes + 1)
            except OSError:
                data = None
            if data is not None and len(data) <= self.max_file_bytes:
                text = data.decode("utf-8", errors="replace")
        self._cache[path] = _Read(stamp, text)
        return text


def render(found: Sequence[Instructions], max_bytes: int) -> str:
    """The system-prompt section for ``found`` within ``max_bytes`` of UTF-8 (empty when nothing applies).

    Over budget, the broadest files are left out first, then the most specific one is
    cut; a closing line names what was left out or cut.
    """
    if not found or max_bytes <= 0:
        return ""
    head = (
        "# Workspace instructions\n"
        "The files below come from the workspace and apply to work in it; a deeper file refines the ones above it."
    )
    kept: list[Instructions] = list(found)
    omitted: list[str] = []

    def size(items: Sequence[Instructions]) -> int:
        return len(_join(head, items, omitted).encode())

    while len(kept) > 1 and size(kept) > max_bytes:
        omitted.append(kept.pop(0).path)
    if size(kept) > max_bytes:
        last = kept[-1]
        room = max_bytes - size([*kept[:-1], Instructions(last.path, "", truncated=True)])
        if room <= 0:
            return ""
        kept[-1] = Instructions(last.path, last.text.encode()[:room].decode("utf-8", errors="ignore"), truncated=True)
    return _join(head, kept, omitted)


def _join(head: str, items: Sequence[Instructions], omitted: Sequence[str]) -> str:
    parts = [head]
    for item in items:
        parts.append(f"Instructions from: {item.path}{' (cut)' if item.truncated else ''}\n{item.text.rstrip()}")
    if omitted:
        parts.append(f"(left out to stay within the budget: {', '.join(omitted)})")
    return "\n\n".join(parts)
