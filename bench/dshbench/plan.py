"""How much to measure: the full plan (``make bench``) and the quick one (``make bench-quick``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent.parent
"""The checkout root (``bench/`` lives directly under it)."""


@dataclass(frozen=True)
class Plan:
    """Run counts and sizes. ``runs`` is the number of samples behind most rows."""

    quick: bool
    runs: int
    version_runs: int
    steps: int
    chunks: int
    append_turns: int
    resume_sizes: tuple[int, ...]
    idle_agents: int
    concurrent_agents: int
    concurrent_turns: int
    acp_chunks: int
    batch_tasks: int = 200
    stream_agents: int = 1_000
    stream_chunks: int = 100
    project: Path = PROJECT

    @classmethod
    def full(cls) -> Plan:
        return cls(
            quick=False,
            runs=9,
            version_runs=10,
            steps=201,
            chunks=20_000,
            append_turns=400,
            resume_sizes=(1_000, 10_000, 100_000),
            idle_agents=1_000,
            concurrent_agents=100,
            concurrent_turns=2,
            acp_chunks=5_000,
        )

    @classmethod
    def fast(cls) -> Plan:
        """Fewer runs and smaller sizes, for a one-minute smoke of every scenario."""
        return cls(
            quick=True,
            runs=3,
            version_runs=3,
            steps=51,
            chunks=5_000,
            append_turns=50,
            resume_sizes=(1_000, 10_000),
            idle_agents=1_000,
            concurrent_agents=100,
            concurrent_turns=1,
            acp_chunks=1_000,
            batch_tasks=50,
            stream_agents=200,
            stream_chunks=40,
        )

    def with_runs(self, runs: int | None) -> Plan:
        return self if runs is None else replace(self, runs=runs, version_runs=max(runs, self.version_runs))
