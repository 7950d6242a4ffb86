"""``grep`` on ripgrep: where the binary is, how it is run, and how matches read.

The binary comes from the ``ripgrep`` package (a runtime dependency that installs
``rg`` beside the Python interpreter's scripts); a ``rg`` on ``PATH`` is the fallback.
It runs without a shell (the pattern is one argv element) and with ``--no-config``, so
no ripgrep config file of the host can add options (a preprocessor, say). Its output
is read up to :data:`MAX_OUTPUT_BYTES`; an abort kills it.
"""

from __future__ import annotations

import asyncio
import functools
import os
import shutil
import sys
import sysconfig
from dataclasses import dataclass

from dsh.core.errors import HarnessError
from dsh.kernel import AbortSignal

MAX_MATCHES = 200
"""The most matching lines one grep result lists."""

MAX_COLUMNS = 500
"""Matching lines longer than this are shown as a preview."""

MAX_OUTPUT_BYTES = 1 << 20
"""The most ripgrep output read per search; the process is stopped beyond it."""


def _candidates() -> list[str]:
    name = "rg.exe" if os.name == "nt" else "rg"
    folders = [sysconfig.get_path("scripts"), os.path.dirname(sys.executable)]
    found = [os.path.join(folder, name) for folder in folders]
    on_path = shutil.which(name)
    if on_path is not None:
        found.append(on_path)
    return found


@functools.cache
def ripgrep_path() -> str:
    """The ``rg`` binary to run (memoized); ``HarnessError`` ``RIPGREP_MISSING`` if none is found."""
    for candidate in _candidates():
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise HarnessError(
        "ripgrep (rg) was not found beside the Python interpreter nor on PATH: reinstall dsh "
        "(`pip install ripgrep` provides it); until then search with bash (`grep -rn`)",
        "RIPGREP_MISSING",
    )


@dataclass(frozen=True)
class Match:
    path: str
    line: int
    text: str


@dataclass(frozen=True)
class SearchOutcome:
    """What ripgrep found: the matches parsed, whether output was cut, its error text."""

    matches: tuple[Match, ...]
    truncated: bool
    exit_code: int
    stderr: str


def ripgrep_args(pattern: str, target: str, include: str | None) -> list[str]:
    args = [
        "--no-config",
        "--line-number",
        "--with-filename",
        "--no-heading",
        "--null",
        "--color=never",
        "--no-require-git",
        f"--max-columns={MAX_COLUMNS}",
        "--max-columns-preview",
        "--sort=path",
        "--regexp",
        pattern,
    ]
    if include:
        args += ["--glob", include]
    return [*args, "--", target]


def parse_matches(output: bytes) -> list[Match]:
    """``path NUL line:text`` lines into matches (other lines, e.g. a cut last one, skipped)."""
    matches: list[Match] = []
    for raw in output.decode("utf-8", errors="replace").splitlines():
        path, nul, rest = raw.partition("\0")
        number, colon, line = rest.partition(":")
        if nul and colon and number.isdigit():
            matches.append(Match(path=path.removeprefix("./"), line=int(number), text=line))
    return matches


async def _read_capped(
    process: asyncio.subprocess.Process, stream: asyncio.StreamReader, cap: int
) -> tuple[bytes, bool]:
    """Read ``stream`` to its end or to ``cap`` bytes; at the cap the process is killed."""
    out = bytearray()
    while True:
        chunk = await stream.read(1 << 16)
        if not chunk:
            return bytes(out), False
        out += chunk
        if len(out) >= cap:
            _kill(process)
            return bytes(out[:cap]), True


async def run_ripgrep(
    args: list[str], cwd: str, signal: AbortSignal | None, cap: int = MAX_OUTPUT_BYTES
) -> SearchOutcome:
    """Run ripgrep with ``args`` in ``cwd``; ``HarnessError`` ``ABORTED`` if ``signal`` fires."""
    process = await asyncio.create_subprocess_exec(
        ripgrep_path(),
        *args,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    assert process.stderr is not None
    remove = signal.add_callback(lambda: _kill(process)) if signal is not None else None
    try:
        (output, truncated), errors = await asyncio.gather(
            _read_capped(process, process.stdout, cap), process.stderr.read()
        )
        exit_code = await process.wait()
    finally:
        if remove is not None:
            remove()
    if signal is not None and signal.aborted:
        raise HarnessError("search aborted", "ABORTED")
    return SearchOutcome(
        matches=tuple(parse_matches(output)),
        truncated=truncated,
        exit_code=exit_code,
        stderr=errors.decode("utf-8", errors="replace").strip(),
    )


def _kill(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.kill()
