"""Timing a whole process from launch to exit (wall time and its own peak RSS), optionally
noting when its first request reached a wire server.

Peak RSS needs care: on Linux a process's ``ru_maxrss`` keeps the high-water mark of
the address space it replaced at ``exec``, i.e. the RSS of whoever forked it. A child
forked straight from this (large) bench process would report this process's RSS. So
the command runs under a tiny launcher (``python -I -c``, about 10 MB) that starts it,
reaps it with ``os.wait4`` and prints its rusage: the command's peak is then its own
(or the launcher's 10 MB floor). The launcher also stamps the launch time on the
system-wide monotonic clock that :func:`time.perf_counter` reads.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from dsh.testing.wire import WireServer

LAUNCHER = """\
import json, os, subprocess, sys, time
start = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
child.returncode = os.waitstatus_to_exitcode(status)
wall = time.perf_counter() - start
cpu = usage.ru_utime + usage.ru_stime
print(json.dumps({"start": start, "wall": wall, "cpu": cpu, "maxrss": usage.ru_maxrss, "status": child.returncode}))
"""


@dataclass(frozen=True)
class ProcessRun:
    """One launch: seconds to exit, the command's peak RSS (KiB), its exit status and stderr.

    ``cpu`` is the user + system seconds of the command and of the children it waited for
    (its ``wait4`` rusage), the launcher excluded.

    ``first_request`` is the seconds from launch until the wire server saw the first
    request, or None when the process exited without sending one.
    """

    wall: float
    peak_rss_kb: int
    returncode: int
    stderr: str
    first_request: float | None = None
    cpu: float = 0.0

    def failure(self) -> str | None:
        """None for exit 0; else a one-line reason with the last line of stderr."""
        if self.returncode == 0:
            return None
        lines = self.stderr.strip().splitlines()
        return f"exit {self.returncode}: {lines[-1] if lines else 'no stderr'}"


async def timed_run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    server: WireServer | None = None,
    timeout: float = 120.0,
) -> ProcessRun:
    """Launch ``argv`` (stdin and stdout closed) and wait for it; see :class:`ProcessRun`.

    The caller's event loop -- and a wire server on it -- keeps serving meanwhile. A
    command still running after ``timeout`` seconds is killed with its launcher (their
    process group) and reported with exit -9.
    """
    with tempfile.TemporaryFile() as errors:
        launcher = await asyncio.create_subprocess_exec(
            sys.executable, "-I", "-c", LAUNCHER, *argv,
            env=dict(env) if env is not None else None, cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=errors,
            start_new_session=True,
        )  # fmt: skip
        exited = asyncio.ensure_future(launcher.communicate())
        seen: float | None = None
        if server is not None:
            requested = asyncio.ensure_future(server.wait_for_requests(1))
            await asyncio.wait({exited, requested}, return_when=asyncio.FIRST_COMPLETED)
            if requested.done():
                seen = time.perf_counter()
            else:
                requested.cancel()
        try:
            stdout, _ = await asyncio.wait_for(asyncio.shield(exited), timeout)
        except TimeoutError:
            os.killpg(launcher.pid, signal.SIGKILL)  # the launcher and the command it started
            await exited
            return ProcessRun(timeout, 0, -9, f"killed after {timeout:.0f} s")
        errors.seek(0)
        stderr = errors.read().decode(errors="replace")
    lines = stdout.decode().strip().splitlines()
    if launcher.returncode != 0 or not lines:
        return ProcessRun(0.0, 0, launcher.returncode or -1, stderr)
    report = json.loads(lines[-1])
    first = seen - report["start"] if seen is not None else None
    return ProcessRun(report["wall"], report["maxrss"], report["status"], stderr, first, report["cpu"])
