"""What the numbers were measured on: CPU model, cores, memory, Python, dsh, filesystem."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import dsh


def _cpuinfo_field(name: str) -> str | None:
    try:
        lines = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        key, sep, value = line.partition(":")
        if sep and key.strip() == name:
            return value.strip()
    return None


def _memory_total_mb() -> float | None:
    try:
        lines = Path("/proc/meminfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) / 1024
    return None


def _filesystem(path: str) -> str | None:
    """The filesystem type holding ``path`` (fsync cost depends on it), from ``df``."""
    try:
        out = subprocess.run(["df", "-T", path], capture_output=True, text=True, check=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    rows = out.strip().splitlines()
    return rows[-1].split()[1] if len(rows) > 1 else None


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _git_revision(root: Path) -> str | None:
    """The short HEAD commit, with ``+modified`` when tracked files differ from it."""
    revision = _git(root, "rev-parse", "--short", "HEAD")
    if revision and _git(root, "status", "--porcelain", "--untracked-files=no"):
        revision += "+modified"
    return revision


def machine_info(project: Path, scratch: str) -> dict[str, Any]:
    """A JSON-ready description of this machine and checkout; ``scratch`` is where temp files go."""
    return {
        "cpu": _cpuinfo_field("model name") or platform.processor() or "unknown",
        "cores": os.cpu_count(),
        "usableCores": len(os.sched_getaffinity(0)),
        "memoryMB": _memory_total_mb(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "dsh": dsh.__version__,
        "revision": _git_revision(project),
        "scratchFilesystem": _filesystem(scratch),
    }
