"""Running a job in a fresh process: the parent's :func:`run_child` and the child's :func:`child_main`.

The child is ``python bench/run.py --child '<job JSON>'``. The job object has a
``kind`` (a key of :data:`dshbench.jobs.JOBS`), the job's parameters, and optionally
``profile`` (a path: the measured regions run under cProfile and the stats are written
there) and ``cpus`` (CPU numbers: the child runs on those cores only, see
:func:`pin`). The child prints exactly one JSON line, the job's result, on stdout; its
stderr carries logs and, on failure, the traceback. A fresh process per job keeps
peak RSS and CPU time clean.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from dsh.testing.wire import Entry, WireServer
from dshbench.jobs import JOBS
from dshbench.probe import Probe

RUN_PY = Path(__file__).resolve().parent.parent / "run.py"


class ChildFailedError(Exception):
    """A job process exited non-zero or printed no result; the message holds its stderr tail."""


async def run_child(job: dict[str, Any], *, timeout: float = 300.0) -> dict[str, Any]:
    """Run ``job`` in a new interpreter and return its result; raise :class:`ChildFailedError` on failure.

    The caller's event loop keeps running meanwhile (a wire server in this process
    answers the child). A child that outlives ``timeout`` seconds is killed.
    """
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(RUN_PY),
        "--child",
        json.dumps(job),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise ChildFailedError(f"job {job['kind']} ran longer than {timeout:.0f} s and was killed") from None
    lines = stdout.decode().strip().splitlines()
    if process.returncode != 0 or not lines:
        tail = stderr.decode(errors="replace").strip().splitlines()[-12:]
        raise ChildFailedError(f"job {job['kind']} failed (exit {process.returncode}):\n" + "\n".join(tail))
    result: dict[str, Any] = json.loads(lines[-1])
    return result


async def run_served(script: Iterable[Entry], job: dict[str, Any], *, repeat: bool = False) -> dict[str, Any]:
    """Run ``job`` against a fresh wire server answering ``script`` (its URL goes in as ``baseUrl``)."""
    async with WireServer(script, repeat=repeat) as server:
        return await run_child({**job, "baseUrl": server.base_url})


def split_cores() -> tuple[set[int], set[int]] | None:
    """Two disjoint halves of the cores this process may use (server, client), or None with fewer than two."""
    if not hasattr(os, "sched_getaffinity"):  # pragma: no cover -- not Linux
        return None
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        return None
    half = len(cores) // 2
    return set(cores[:half]), set(cores[half:])


@contextlib.contextmanager
def pin(cpus: set[int] | None) -> Iterator[None]:
    """Run this thread (the event loop's) on ``cpus`` only while the block runs (no-op for None)."""
    if cpus is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def child_main(raw_job: str) -> int:
    """Run one job in this process and print its result as one JSON line; the exit status."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    job = json.loads(raw_job)
    if job.get("cpus"):
        os.sched_setaffinity(0, set(job["cpus"]))  # before any thread starts: they inherit it
    run = JOBS[job["kind"]]
    probe = Probe(job.get("profile"))
    result = asyncio.run(run(job, probe))
    probe.save()
    print(json.dumps(result), flush=True)
    return 0
