"""``dsh doctor``: what this machine enforces, probed for real, in plain words.

Today that is the OS sandbox of bash: each backend is probed (a confined command
must write inside a directory and fail next to it), the one ``bash-local`` would
use is named, and each permission mode says what the kernel enforces under it.
Where no sandbox works, it says that bash calls fall back to approvals. The
report goes to stdout; the status is 0 (it is a report, not a check).
"""

from __future__ import annotations

import argparse
import platform

from dsh.core.approval import PERMISSION_MODES, PermissionMode
from dsh.core.bash import SandboxSupport
from dsh.plugins.bash_local import detect, platform_line

NAMES = {"bwrap": "bubblewrap", "landlock": "Landlock", "none": "none"}


def _state(support: SandboxSupport) -> str:
    return f"works: {support.detail}" if support.fs_write else f"does not work: {support.detail}"


def enforced(support: SandboxSupport, mode: PermissionMode) -> str:
    """What the kernel enforces on bash commands under ``mode`` with ``support``."""
    if mode == "full-access":
        return "nothing is confined (by choice)"
    if not support.covers(mode):
        return "not confined here: the permissions plugin asks before each bash call (dsh run: rejected unless --yes)"
    if mode == "workspace-write":
        return "file writes only inside the workspace, its extra directories and the temp directories; network open"
    if support.network:
        network = "network cut" if support.backend == "bwrap" else "TCP bind/connect cut (other protocols open)"
    else:
        network = f"network open (Landlock ABI {support.landlock_abi} cannot cut it; ABI 4 can)"
    return f"no file writes (but /dev/null); {network}"


def report(choice: str = "auto") -> str:
    """The doctor's report as text, probing (once per process) what it needs."""
    chosen = detect(choice)  # type: ignore[arg-type]
    lines = [
        f"dsh doctor: {platform_line()}, Python {platform.python_version()}",
        "sandbox for bash commands (bash-local):",
        f"  bubblewrap: {_state(detect('bwrap'))}",
        f"  Landlock:   {_state(detect('landlock'))}",
        f"  in use:     {NAMES[chosen.backend]}"
        + (" (backend auto: bubblewrap when it works, else Landlock)" if choice == "auto" else f" (forced: {choice})"),
        "enforced per permission mode:",
    ]
    lines += [f"  {mode + ':':16} {enforced(chosen, mode)}" for mode in PERMISSION_MODES]
    if not chosen.fs_write:
        lines.append("to sandbox bash: install bubblewrap (apt-get install bubblewrap) or use a kernel with Landlock")
    return "\n".join(lines) + "\n"


async def command(args: argparse.Namespace) -> int:
    """The ``doctor`` subcommand."""
    print(report(args.backend), end="", flush=True)
    return 0
