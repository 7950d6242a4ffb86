"""Landlock (Linux 5.13+) through ``ctypes``: write confinement without a compiled extension.

A Landlock ruleset names the access rights it *handles*; a handled right is then
denied everywhere except beneath the directories a rule grants it for. Only write
rights are handled here (reads stay open everywhere), so a ruleset confines what a
command may create, change or remove. ``/dev/null`` is always writable (that is how
shells discard output); under ``workspace-write`` so is everything beneath the
writable directories. Under ``read-only``, from ABI 4 on, TCP bind and connect are
handled with no rule: both are refused; from ABI 6 on, the command may neither
connect to abstract Unix sockets nor signal processes outside its sandbox. Landlock
also keeps a confined process from changing mounts and from tracing processes
outside its sandbox, whatever its capabilities.

The parent builds the ruleset once per policy (:func:`create_ruleset`, an fd it
owns) and each command starts through :data:`TRAMPOLINE`: a few lines of Python
(``python -I -S -c``) that inherit the fd, set ``no_new_privs``, restrict themselves
with it and ``exec`` bash, so bash and everything it starts are confined. Applying
the ruleset in ``preexec_fn`` instead would run Python between ``fork`` and ``exec``
of a process with other threads (the event loop's worker threads), which
:mod:`subprocess` documents as unsafe; the trampoline costs one interpreter start
(about 20 ms) and is safe. A trampoline that cannot restrict itself exits 125
without running the command.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys

from dsh.core.bash import SandboxPolicy

SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
"""The Landlock system call numbers (the same on every architecture Linux numbers uniformly)."""

CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2: link or rename across directories
TRUNCATE = 1 << 14  # ABI 3
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

_WRITES_V1 = (
    WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO | MAKE_BLOCK
) | MAKE_SYM

TRAMPOLINE = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
zero = ctypes.c_ulong(0)
fd = int(sys.argv[1])
if libc.prctl(ctypes.c_int(38), ctypes.c_ulong(1), zero, zero, zero) != 0 or libc.syscall(
    ctypes.c_long(446), ctypes.c_long(fd), ctypes.c_long(0)
) != 0:
    sys.stderr.write("dsh sandbox: landlock: cannot restrict the command: %s\\n" % os.strerror(ctypes.get_errno()))
    sys.exit(125)
os.close(fd)
try:
    os.execvp(sys.argv[2], sys.argv[3:])
except OSError as error:
    sys.stderr.write("dsh sandbox: cannot run %s: %s\\n" % (sys.argv[2], error.strerror))
    sys.exit(127)
"""
"""The program between the spawn and bash: ``python -I -S -c TRAMPOLINE FD FILE ARGV...``."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),  # ABI 4
        ("scoped", ctypes.c_uint64),  # ABI 6
    )


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # the kernel's struct is packed: 12 bytes
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


class LandlockError(OSError):
    """A Landlock call failed (``errno`` and ``strerror`` as the kernel said)."""


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _syscall(number: int, *args: object) -> int:
    """Call ``syscall(number, *args)``; raise :class:`LandlockError` when it returns -1."""
    result = int(_libc().syscall(ctypes.c_long(number), *args))
    if result < 0:
        code = ctypes.get_errno()
        raise LandlockError(code, os.strerror(code))
    return result


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled (or not Linux)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        return _syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    except LandlockError:
        return 0


def write_rights(abi: int) -> int:
    """The write rights of ``abi`` (what a ruleset handles, and grants beneath a writable directory)."""
    rights = _WRITES_V1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    return rights


def create_ruleset(policy: SandboxPolicy, abi: int) -> int:
    """A Landlock ruleset fd for ``policy`` (the caller owns it; close it with ``os.close``).

    Raises :class:`LandlockError` (or ``OSError`` for a writable directory that cannot
    be opened); nothing leaks on failure.
    """
    handled = write_rights(abi)
    strict = policy.mode == "read-only"
    network = NET_BIND_TCP | NET_CONNECT_TCP if strict and abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if strict and abi >= 6 else 0
    attr = _RulesetAttr(handled, network, scoped)
    fields = 3 if scoped else 2 if network else 1  # the size says which fields the kernel reads
    size = fields * ctypes.sizeof(ctypes.c_uint64)
    ruleset = _syscall(SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    try:
        _grant(ruleset, "/dev/null", handled & (WRITE_FILE | TRUNCATE))
        for directory in policy.writable:
            _grant(ruleset, directory, handled)
    except OSError:
        os.close(ruleset)
        raise
    return ruleset


def _grant(ruleset: int, path: str, rights: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        beneath = _PathBeneathAttr(rights, fd)
        rule = ctypes.c_long(RULE_PATH_BENEATH)
        _syscall(SYS_ADD_RULE, ctypes.c_long(ruleset), rule, ctypes.byref(beneath), ctypes.c_long(0))
    finally:
        os.close(fd)


def trampoline_prefix(ruleset: int) -> tuple[str, ...]:
    """The argv that runs what follows it (``FILE ARGV...``) restricted by ``ruleset``."""
    return (sys.executable, "-I", "-S", "-c", TRAMPOLINE, str(ruleset))
