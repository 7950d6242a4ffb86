"""Measuring inside a job process: CPU, wall time, RSS, and optional cProfile capture.

``Probe.region()`` brackets the code under measurement and yields a :class:`Span`
that holds the process CPU time (``time.process_time``: user + system of this
process, children excluded) and the wall time once the block exits. With a profile
path, every region also runs under one ``cProfile.Profile`` whose statistics
:meth:`Probe.save` writes, so set-up code never pollutes a profile.
"""

from __future__ import annotations

import cProfile
import gc
import os
import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass
class Span:
    """The cost of one region, in seconds (filled when the region exits)."""

    cpu: float = 0.0
    wall: float = 0.0
    children: float = 0.0
    """CPU of the child processes this process waited for during the region (bash commands)."""


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def peak_rss_kb() -> int:
    """The peak resident set size of this process image so far, in KiB (``VmHWM``).

    Not ``ru_maxrss``: on Linux that keeps the high-water mark of the address space
    replaced at ``exec`` -- the forking parent's RSS -- so a job forked from a large
    bench process would report the parent's size.
    """
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kernels without VmHWM


def current_rss_kb() -> int:
    """The resident set size right now (``/proc/self/statm``), after a full garbage collection."""
    gc.collect()
    with open("/proc/self/statm", encoding="ascii") as statm:
        resident_pages = int(statm.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE") // 1024


class Probe:
    """Regions to measure; see the module docstring."""

    def __init__(self, profile_path: str | None = None) -> None:
        self.profile_path = profile_path
        self._profiler = cProfile.Profile(time.process_time) if profile_path else None  # CPU, as the table

    @contextmanager
    def region(self) -> Iterator[Span]:
        span = Span()
        profiler = self._profiler
        if profiler is not None:
            profiler.enable()
        cpu, wall, children = time.process_time(), time.perf_counter(), _children_cpu()
        try:
            yield span
        finally:
            span.cpu = time.process_time() - cpu
            span.wall = time.perf_counter() - wall
            span.children = _children_cpu() - children
            if profiler is not None:
                profiler.disable()

    def save(self) -> None:
        """Write the collected profile (a no-op without a profile path)."""
        if self._profiler is not None and self.profile_path:
            self._profiler.dump_stats(self.profile_path)
