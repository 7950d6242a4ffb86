"""bubblewrap (``bwrap``): each command in a read-only view of the host, in new namespaces.

The whole file system is bound read-only (``--ro-bind / /``) and the writable
directories of the policy are bound back read-write over it, parents first; ``/dev``
is bubblewrap's own minimal device tree (``/dev/null`` and friends stay writable),
and ``/proc`` a fresh procfs in a new PID namespace: the host's ``/proc/<pid>/root``
links would otherwise lead back to the writable host file system. Under
``read-only`` a new, empty network namespace cuts the network (loopback and abstract
Unix sockets included). Every capability is dropped (``--cap-drop ALL``): run as root,
bubblewrap would otherwise leave the command able to remount the file system
read-write.

Consequences for commands: a process a command leaves running (``server &``) ends
with the command, because the namespace ends with its first process; a command
killed by a signal is reported by bubblewrap as exit status ``128 + signal``.
No new session is made (``--new-session``): the command already runs in its own
session without a controlling terminal, and group-wide kills must keep reaching it.
"""

from __future__ import annotations

import shutil

from dsh.core.bash import SandboxPolicy


def find_bwrap() -> str | None:
    """The path of ``bwrap`` on PATH, or None."""
    return shutil.which("bwrap")


def bwrap_prefix(bwrap: str, policy: SandboxPolicy) -> tuple[str, ...]:
    """The argv that runs what follows it (``FILE ARGV...``) confined to ``policy``."""
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-pid", "--cap-drop", "ALL"]
    if policy.mode == "read-only":
        argv.append("--unshare-net")
    for directory in sorted(policy.writable):
        argv += ["--bind", directory, directory]
    argv.append("--")
    return tuple(argv)
