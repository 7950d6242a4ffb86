"""dsh benchmarks: the scenarios ``bench/run.py`` runs and the pieces they share.

Layout: :mod:`.plan` (how much to measure), :mod:`.scenarios` (one module per table
section, run in the parent process), :mod:`.jobs` (the measured work, each run in a
fresh child process by :mod:`.child`), :mod:`.stack` (the real dsh stack a job boots),
:mod:`.probe` (CPU, wall and RSS inside a job), :mod:`.process` (timing whole
commands), :mod:`.acp_client`, :mod:`.metrics`, :mod:`.table`, :mod:`.machine` and
:mod:`.hotspots` (cProfile listings). Never imported by dsh or its tests.
"""

from dshbench.metrics import Metric, Summary, Target
from dshbench.plan import PROJECT, Plan

__all__ = ["PROJECT", "Metric", "Plan", "Summary", "Target"]
