"""The measurement jobs a child process can run, by name (see :mod:`dshbench.child`)."""

from collections.abc import Callable, Coroutine
from typing import Any, TypeAlias

from dshbench.jobs.agents import idle_agents_job
from dshbench.jobs.checks import BenchRunError
from dshbench.jobs.storage import EVENTS_PER_TURN, append_rate_job, resume_job
from dshbench.jobs.streaming import bare_streaming_job, streaming_job
from dshbench.jobs.turns import chunks_job, concurrent_job, turn_job
from dshbench.probe import Probe

Job: TypeAlias = Callable[[dict[str, Any], Probe], Coroutine[Any, Any, dict[str, Any]]]

JOBS: dict[str, Job] = {
    "append-rate": append_rate_job,
    "chunks": chunks_job,
    "concurrent": concurrent_job,
    "idle-agents": idle_agents_job,
    "resume": resume_job,
    "streaming": streaming_job,
    "streaming-bare": bare_streaming_job,
    "turn": turn_job,
}

__all__ = ["EVENTS_PER_TURN", "JOBS", "BenchRunError", "Job"]
